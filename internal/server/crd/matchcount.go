package crd

// matchCount is kube-openapi's MatchCount of v against s: how many of its
// validators applied and passed, counted as its SchemaValidator does. kube
// reports the failures of the anyOf or oneOf alternative with the highest
// count (the first of equals), so that of a string schema with a format
// rather than an integer one's for a string.
func (s *Schema) matchCount(v any) int {
	if v == nil {
		if _, _, bad := s.typeMismatch(v); bad {
			return 0
		}
		return 1
	}
	n := 1 // the schema validator's own
	if (s.Type != "" || s.IntOrString) || s.kubeFormat() != "" {
		n++
		if _, _, bad := s.typeMismatch(v); !bad {
			n++
		}
	}
	n += 2 + s.junctorCount(v) // the junctors' validator, which counts itself
	n++                        // enum
	switch v := v.(type) {
	case string:
		n++ // length and pattern
		if s.kubeFormat() != "" {
			n++
		}
	case map[string]any:
		n++
		for k, e := range v {
			if p := s.Properties[k]; p != nil {
				n += p.matchCount(e)
			} else if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
				n += s.AdditionalProperties.Schema.matchCount(e)
			}
		}
	case []any:
		n += 2
		if s.Items != nil {
			for _, e := range v {
				n += s.Items.matchCount(e)
			}
		}
	case bool:
	default: // a number
		n += 2
	}
	return n
}

// junctorCount is what anyOf, oneOf and allOf add to the match count: the
// first valid anyOf alternative's or else the best, the one valid oneOf
// alternative's or, none valid, the best, and every allOf schema's.
func (s *Schema) junctorCount(v any) int {
	n := 0
	if len(s.AnyOf) > 0 {
		best := 0
		for _, b := range s.AnyOf {
			c := b.matchCount(v)
			if len(b.check(v, nil, "")) == 0 {
				best = c
				break
			}
			best = max(best, c)
		}
		n += best
	}
	if len(s.OneOf) > 0 {
		best, valid, first := 0, 0, 0
		for _, b := range s.OneOf {
			c := b.matchCount(v)
			if len(b.check(v, nil, "")) == 0 {
				if valid++; valid == 1 {
					first = c
				}
			} else if valid == 0 {
				best = max(best, c)
			}
		}
		switch valid {
		case 0:
			n += best
		case 1:
			n += first
		}
	}
	for _, b := range s.AllOf {
		n += b.matchCount(v)
	}
	return n
}
