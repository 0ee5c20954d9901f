package server

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/servicealloc"
)

// startServiceAllocator gives the Services written through s their cluster
// IPs and node ports, as kube-apiserver's Service storage.
func (s *Server) startServiceAllocator(ctx context.Context) (*servicealloc.Allocator, error) {
	a, err := servicealloc.New(ctx, s.registry, s.cfg.Storage, s.catalog, s.cfg.Services, s.log)
	if err != nil {
		return nil, err
	}
	services, _ := s.catalog.Get("", "v1", "services")
	services.Allocate, services.Release = a.Begin, a.Release
	return a, nil
}

// repairInterval is how often the leader frees the allocations no Service
// holds (kube's repairLoopInterval).
const repairInterval = 3 * time.Minute

// repairServiceAllocations runs the allocator's Repair while this server
// leads.
func (s *Server) repairServiceAllocations(ctx context.Context) {
	services, _ := s.catalog.Get("", "v1", "services")
	t := time.NewTicker(repairInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.services.Repair(ctx, services, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Warn("repairing service allocations", "err", err)
		}
	}
}

// kubernetesServiceInterval is how often the leader checks the
// `kubernetes` Service and its endpoints (kube's
// DefaultEndpointReconcilerInterval).
const kubernetesServiceInterval = 10 * time.Second

// kubernetesService keeps, while this server leads, the Service
// default/kubernetes and its Endpoints and EndpointSlice, as kube's
// kubernetesservice controller and endpoints reconciler: the Service is
// made when missing (the first address of the range, port 443 to the
// advertised port; never reconciled after, as kube's), the endpoints name
// the advertised address (the leader's: the other servers on the store
// are not listed, where kube's lease reconciler lists every apiserver).
func (s *Server) kubernetesService(ctx context.Context) {
	t := time.NewTicker(kubernetesServiceInterval)
	defer t.Stop()
	for {
		if err := s.ensureKubernetesService(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("keeping the kubernetes service", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// The names and labels kube gives the `kubernetes` Service and endpoints.
const (
	kubernetesServiceName = "kubernetes"
	kubernetesPortName    = "https"
)

func (s *Server) ensureKubernetesService(ctx context.Context) error {
	if err := s.ensureDefaultServiceCIDR(ctx); err != nil {
		return err
	}
	ip, port := s.cfg.Advertise.Addr().Unmap().String(), int(s.cfg.Advertise.Port())
	svcPort := map[string]any{"name": kubernetesPortName, "protocol": "TCP", "port": 443, "targetPort": port}
	service := api.Object{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": kubernetesServiceName, "namespace": "default",
			"labels": map[string]any{"provider": "kubernetes", "component": "apiserver"}},
		"spec": map[string]any{"ports": []any{svcPort}, "clusterIP": s.services.FirstIP().String(),
			"ipFamilyPolicy": "SingleStack", "sessionAffinity": "None", "type": "ClusterIP"},
	}
	if err := s.ensureObject(ctx, "", "v1", "services", service, nil); err != nil {
		return err
	}
	ports := []any{map[string]any{"name": kubernetesPortName, "port": port, "protocol": "TCP"}}
	endpoints := api.Object{
		"apiVersion": "v1", "kind": "Endpoints",
		"metadata": map[string]any{"name": kubernetesServiceName, "namespace": "default",
			"labels": map[string]any{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		"subsets": []any{map[string]any{"addresses": []any{map[string]any{"ip": ip}}, "ports": ports}},
	}
	if err := s.ensureObject(ctx, "", "v1", "endpoints", endpoints, []string{"subsets"}); err != nil {
		return err
	}
	family := "IPv4"
	if s.cfg.Advertise.Addr().Unmap().Is6() {
		family = "IPv6"
	}
	slice := api.Object{
		"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
		"metadata": map[string]any{"name": kubernetesServiceName, "namespace": "default",
			"labels": map[string]any{"kubernetes.io/service-name": kubernetesServiceName}},
		"addressType": family,
		"endpoints":   []any{map[string]any{"addresses": []any{ip}, "conditions": map[string]any{"ready": true}}},
		"ports":       ports,
	}
	return s.ensureObject(ctx, "discovery.k8s.io", "v1", "endpointslices", slice, []string{"addressType", "endpoints", "ports"})
}

// ensureObject creates want unless it exists, and makes the fields kept
// (top-level) and the labels of an existing one want's; with none kept,
// an existing one is left as it is.
func (s *Server) ensureObject(ctx context.Context, group, version, plural string, want api.Object, kept []string) error {
	res, _ := s.catalog.Get(group, version, plural)
	// Read first: a create of a Service that exists would be refused for
	// its address (allocated before the store's create), not as existing.
	_, err := s.registry.GetStored(ctx, res, want.Namespace(), want.Name())
	if isReason(err, api.StatusReasonNotFound) {
		_, err = s.registry.Create(ctx, res, want.Namespace(), want.DeepCopy())
		if err == nil || !isReason(err, api.StatusReasonAlreadyExists) {
			return err
		}
	} else if err != nil {
		return err
	}
	if kept == nil {
		return nil
	}
	_, err = s.registry.Update(ctx, res, want.Namespace(), want.Name(), func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		labels, _ := next.Metadata()["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			next.SetMeta("labels", labels)
		}
		maps.Copy(labels, want.Metadata()["labels"].(map[string]any))
		for _, f := range kept {
			next[f] = want[f]
		}
		return next, nil // the same as cur: the registry writes nothing
	})
	if isReason(err, api.StatusReasonNotFound) {
		return nil // deleted meanwhile: made again at the next round
	}
	return err
}

// ensureDefaultServiceCIDR keeps the ServiceCIDR `kubernetes` of the
// configured ranges, as kube's defaultservicecidr controller: made when
// missing, then marked Ready when its cidrs are the flags' and it has no
// Ready condition (one whose cidrs differ is left as it is, as kube's).
func (s *Server) ensureDefaultServiceCIDR(ctx context.Context) error {
	cidrs := api.StringList(s.services.ClusterIPRanges())
	cidr := api.Object{
		"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
		"metadata": map[string]any{"name": kubernetesServiceName}, "spec": map[string]any{"cidrs": cidrs},
	}
	if err := s.ensureObject(ctx, "networking.k8s.io", "v1", "servicecidrs", cidr, nil); err != nil {
		return err
	}
	res, _ := s.catalog.Get("networking.k8s.io", "v1", "servicecidrs")
	_, err := s.registry.Update(ctx, partView(res), "", kubernetesServiceName, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		spec, _ := next["spec"].(map[string]any)
		status, _ := next["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			next["status"] = status
		}
		conditions, _ := status["conditions"].([]any)
		if !slices.Equal(api.Strings(spec["cidrs"]), s.services.ClusterIPRanges()) || slices.ContainsFunc(conditions, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Ready" && m["status"] != "Unknown"
		}) {
			return next, nil // as it was: the registry writes nothing
		}
		status["conditions"] = append(slices.DeleteFunc(conditions, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == "Ready"
		}), map[string]any{
			"type": "Ready", "status": "True", "message": "Kubernetes default Service CIDR is ready",
			"lastTransitionTime": api.NewTime(time.Now()).Format("2006-01-02T15:04:05Z"), "reason": "",
		})
		return next, nil
	})
	return err
}
