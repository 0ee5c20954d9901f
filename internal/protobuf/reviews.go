package protobuf

import "google.golang.org/protobuf/encoding/protowire"

// authorization/v1 and authentication/v1 messages of the access reviews
// (k8s.io/api generated.proto), which client-go's typed clients send as
// protobuf.
var (
	extraMap = func(num protowire.Number) field {
		return field{name: "extra", num: num, kind: kStringsMap, omitZero: true}
	}
	requirement = func(name string) *message {
		return &message{name: name, fields: []field{
			{name: "key", num: 1, kind: kString},
			{name: "operator", num: 2, kind: kString},
			{name: "values", num: 3, kind: kString, pres: repeated, omitZero: true},
		}}
	}
	selectorAttributes = func(name, requirementName string) *message {
		return &message{name: name, fields: []field{
			{name: "rawSelector", num: 1, kind: kString, omitZero: true},
			{name: "requirements", num: 2, kind: kMessage, pres: repeated, omitZero: true, msg: requirement(requirementName)},
		}}
	}
	resourceAttributes = &message{name: "ResourceAttributes", fields: []field{
		{name: "namespace", num: 1, kind: kString, omitZero: true},
		{name: "verb", num: 2, kind: kString, omitZero: true},
		{name: "group", num: 3, kind: kString, omitZero: true},
		{name: "version", num: 4, kind: kString, omitZero: true},
		{name: "resource", num: 5, kind: kString, omitZero: true},
		{name: "subresource", num: 6, kind: kString, omitZero: true},
		{name: "name", num: 7, kind: kString, omitZero: true},
		{name: "fieldSelector", num: 8, kind: kMessage, pres: pointer, msg: selectorAttributes("FieldSelectorAttributes", "FieldSelectorRequirement")},
		{name: "labelSelector", num: 9, kind: kMessage, pres: pointer, msg: selectorAttributes("LabelSelectorAttributes", "LabelSelectorRequirement")},
	}}
	nonResourceAttributes = &message{name: "NonResourceAttributes", fields: []field{
		{name: "path", num: 1, kind: kString, omitZero: true},
		{name: "verb", num: 2, kind: kString, omitZero: true},
	}}
	attributes = []field{
		{name: "resourceAttributes", num: 1, kind: kMessage, pres: pointer, msg: resourceAttributes},
		{name: "nonResourceAttributes", num: 2, kind: kMessage, pres: pointer, msg: nonResourceAttributes},
	}
	subjectAccessReviewSpec = &message{name: "SubjectAccessReviewSpec", fields: append(attributes[:2:2],
		field{name: "user", num: 3, kind: kString, omitZero: true},
		field{name: "groups", num: 4, kind: kString, pres: repeated, omitZero: true},
		extraMap(5),
		field{name: "uid", num: 6, kind: kString, omitZero: true},
	)}
	subjectAccessReviewStatus = &message{name: "SubjectAccessReviewStatus", fields: []field{
		{name: "allowed", num: 1, kind: kBool},
		{name: "reason", num: 2, kind: kString, omitZero: true},
		{name: "evaluationError", num: 3, kind: kString, omitZero: true},
		{name: "denied", num: 4, kind: kBool, omitZero: true},
	}}
	accessReview = func(name string, spec *message) *message {
		return &message{name: name, typeMeta: true, fields: []field{
			{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
			{name: "spec", num: 2, kind: kMessage, msg: spec},
			{name: "status", num: 3, kind: kMessage, msg: subjectAccessReviewStatus},
		}}
	}
	resourceRule = &message{name: "ResourceRule", fields: []field{
		{name: "verbs", num: 1, kind: kString, pres: repeated},
		{name: "apiGroups", num: 2, kind: kString, pres: repeated, omitZero: true},
		{name: "resources", num: 3, kind: kString, pres: repeated, omitZero: true},
		{name: "resourceNames", num: 4, kind: kString, pres: repeated, omitZero: true},
	}}
	nonResourceRule = &message{name: "NonResourceRule", fields: []field{
		{name: "verbs", num: 1, kind: kString, pres: repeated},
		{name: "nonResourceURLs", num: 2, kind: kString, pres: repeated, omitZero: true},
	}}
	selfSubjectRulesReview = &message{name: "SelfSubjectRulesReview", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "SelfSubjectRulesReviewSpec", fields: []field{
			{name: "namespace", num: 1, kind: kString, omitZero: true},
		}}},
		{name: "status", num: 3, kind: kMessage, msg: &message{name: "SubjectRulesReviewStatus", fields: []field{
			{name: "resourceRules", num: 1, kind: kMessage, pres: repeated, msg: resourceRule},
			{name: "nonResourceRules", num: 2, kind: kMessage, pres: repeated, msg: nonResourceRule},
			{name: "incomplete", num: 3, kind: kBool},
			{name: "evaluationError", num: 4, kind: kString, omitZero: true},
		}}},
	}}
	userInfo = &message{name: "UserInfo", fields: []field{
		{name: "username", num: 1, kind: kString, omitZero: true},
		{name: "uid", num: 2, kind: kString, omitZero: true},
		{name: "groups", num: 3, kind: kString, pres: repeated, omitZero: true},
		extraMap(4),
	}}
	selfSubjectReview = &message{name: "SelfSubjectReview", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "status", num: 2, kind: kMessage, msg: &message{name: "SelfSubjectReviewStatus", fields: []field{
			{name: "userInfo", num: 1, kind: kMessage, msg: userInfo},
		}}},
	}}
	tokenReview = &message{name: "TokenReview", typeMeta: true, fields: []field{
		{name: "metadata", num: 1, kind: kMessage, msg: objectMeta},
		{name: "spec", num: 2, kind: kMessage, msg: &message{name: "TokenReviewSpec", fields: []field{
			{name: "token", num: 1, kind: kString, omitZero: true},
			{name: "audiences", num: 2, kind: kString, pres: repeated, omitZero: true},
		}}},
		{name: "status", num: 3, kind: kMessage, msg: &message{name: "TokenReviewStatus", fields: []field{
			{name: "authenticated", num: 1, kind: kBool, omitZero: true},
			{name: "user", num: 2, kind: kMessage, msg: userInfo},
			{name: "error", num: 3, kind: kString, omitZero: true},
			{name: "audiences", num: 4, kind: kString, pres: repeated, omitZero: true},
		}}},
	}}
)

// The access reviews' kinds, by kind.
var (
	authorizationKinds = kindTable(
		accessReview("SelfSubjectAccessReview", &message{name: "SelfSubjectAccessReviewSpec", fields: attributes}),
		accessReview("SubjectAccessReview", subjectAccessReviewSpec),
		accessReview("LocalSubjectAccessReview", subjectAccessReviewSpec),
		selfSubjectRulesReview,
	)
	authenticationKinds = kindTable(selfSubjectReview, tokenReview, tokenRequest)
)
