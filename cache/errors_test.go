package cache

import "syscall"

var errConnRefused error = syscall.ECONNREFUSED
