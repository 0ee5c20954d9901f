package cellib

// CompareQuantities compares two resource quantities as kube's
// resource.Quantity Cmp does: -1, 0 or 1 as a is less than, equal to or
// greater than b. It fails when either is no quantity.
func CompareQuantities(a, b string) (int, error) {
	qa, err := parseQuantity(a)
	if err != nil {
		return 0, err
	}
	qb, err := parseQuantity(b)
	if err != nil {
		return 0, err
	}
	return qa.cmp(qb), nil
}
