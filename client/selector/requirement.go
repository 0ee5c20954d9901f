package selector

import (
	"errors"
	"fmt"
	"strconv"
)

// newRequirement validates a requirement as Kubernetes' labels.NewRequirement
// does: a valid key, a valid value count for op, valid values. values must be
// sorted.
func newRequirement(key string, op operator, values []string) (requirement, error) {
	if err := validateKey(key); err != nil {
		return requirement{}, err
	}
	if err := checkValues(op, values); err != nil {
		return requirement{}, fmt.Errorf("key %q: %w", key, err)
	}
	for _, v := range values {
		if err := validateValue(key, v); err != nil {
			return requirement{}, err
		}
	}
	return requirement{key: key, op: op, values: values}, nil
}

// checkValues checks the number of values op takes. Parsed requirements have
// one value for =, ==, !=, > and <, at least one for in and notin.
func checkValues(op operator, values []string) error {
	switch op {
	case opIn, opNotIn:
		if len(values) == 0 {
			return errors.New("values must be non-empty for operators in and notin")
		}
	case opExists, opDoesNotExist:
		if len(values) != 0 {
			return errors.New("values must be empty for operators exists and does-not-exist")
		}
	case opGreaterThan, opLessThan:
		if _, err := strconv.ParseInt(values[0], 10, 64); err != nil {
			return fmt.Errorf("value %q: must be a base-10 64-bit integer for operators > and <", values[0])
		}
	}
	return nil
}
