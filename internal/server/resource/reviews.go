package resource

import "slices"

// createOnlyVerbs are what discovery lists for a CreateOnly resource.
var createOnlyVerbs = []string{"create"}

// ServedVerbs are the verbs r serves, as discovery lists them.
func (r *Resource) ServedVerbs() []string {
	switch {
	case r.CreateOnly:
		return createOnlyVerbs
	case r.NoDeleteCollection:
		return verbsButDeleteCollection
	}
	return Verbs
}

var verbsButDeleteCollection = slices.DeleteFunc(slices.Clone(Verbs), func(v string) bool { return v == "deletecollection" })
