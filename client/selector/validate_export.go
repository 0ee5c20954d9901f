package selector

// ValidateLabelKey checks a label or annotation key as Kubernetes does: an
// optional DNS-1123 subdomain prefix and "/", then a name of 1 to 63 bytes.
// The server uses it on metadata.labels and metadata.annotations.
func ValidateLabelKey(key string) error { return validateKey(key) }

// ValidateLabel checks a label's key and value as Kubernetes does.
func ValidateLabel(key, value string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	return validateValue(key, value)
}
