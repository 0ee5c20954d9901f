package api

import (
	"fmt"
	"strings"
)

// PathSegmentNameErrors says why name cannot be an object's name in a URL
// path, as apimachinery's content.IsPathSegmentName (IsValidPathSegmentName
// before): "." and ".." would name another path, and "/" and "%" another
// segment once decoded. It returns nil for a name that can.
func PathSegmentNameErrors(name string) []string {
	if name == "." || name == ".." {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var msgs []string
	for _, c := range []string{"/", "%"} {
		if strings.Contains(name, c) {
			msgs = append(msgs, fmt.Sprintf("may not contain '%s'", c))
		}
	}
	return msgs
}
