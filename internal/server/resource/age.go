package resource

import (
	"fmt"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// CreationTimestampDescription is kube's description of
// metadata.creationTimestamp, which its default columns carry.
const CreationTimestampDescription = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

// NameDefinition is the first column of every Table, as kube-apiserver
// has it.
var NameDefinition = api.TableColumnDefinition{
	Name: "Name", Type: "string", Format: "name",
	Description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
}

// since returns a cell with the human age of the timestamp at path, as
// kubectl's AGE column shows it ("<unknown>" if absent).
func since(path ...string) func(api.Object) any {
	return func(o api.Object) any {
		s, _ := Path(o, path...).(string)
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return "<unknown>"
		}
		return HumanDuration(time.Since(t))
	}
}

// HumanDuration formats d as kube's duration.HumanDuration: two significant
// units at most, coarser as d grows ("42s", "5m3s", "3h", "2d4h", "1y30d").
func HumanDuration(d time.Duration) string {
	if d < -time.Second {
		return "<invalid>"
	}
	if d < 0 {
		return "0s"
	}
	s := int(d.Seconds())
	switch {
	case s < 60*2:
		return fmt.Sprintf("%ds", s)
	case d < 10*time.Minute:
		return pair(s/60, "m", s%60, "s")
	case d < 3*time.Hour:
		return fmt.Sprintf("%dm", s/60)
	case d < 8*time.Hour:
		return pair(s/3600, "h", s/60%60, "m")
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", s/3600)
	case d < 8*24*time.Hour:
		return pair(s/86400, "d", s/3600%24, "h")
	case d < 2*365*24*time.Hour:
		return fmt.Sprintf("%dd", s/86400)
	case d < 8*365*24*time.Hour:
		return pair(s/(365*86400), "y", s/86400%365, "d")
	}
	return fmt.Sprintf("%dy", s/(365*86400))
}

func pair(a int, au string, b int, bu string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, au)
	}
	return fmt.Sprintf("%d%s%d%s", a, au, b, bu)
}
