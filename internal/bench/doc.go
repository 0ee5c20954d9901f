// Package bench is listwatch's end-to-end load generator, behind
// `listwatch bench`: it starts a server as a child process (or uses one
// given by URL), drives it over loopback sockets and reports what the
// server spent.
//
// # Measurements
//
//   - Fanout: W watches on one resource, one writer at R updates/s of
//     S-byte objects for D; each object carries its write's wall-clock time,
//     so every delivery gives a write-to-delivery latency. Watchers read raw
//     lines and find the timestamp and resourceVersion by scanning, without
//     decoding JSON. The same watchers then read a bare socket server (the
//     hidden `bench bare-server`) that writes one pre-encoded frame per
//     delivery: the floor that the server's CPU per delivery is compared to.
//   - Idle: the server's resident memory per idle watch.
//   - List: time to last byte of a LIST served from the watch cache.
//
// Server CPU is utime+stime from /proc/<pid>/stat over the measured
// interval, memory VmRSS and VmHWM from /proc/<pid>/status; both need
// Linux and the server's pid (a server given by URL reports neither unless
// its pid is given too).
//
// # Caveats
//
// The load generator shares the machine with the server, as the targets in
// docs/PERFORMANCE.md assume; its own CPU time is reported so that a
// saturated machine is visible. To take little of it, HTTP/1.1 cleartext
// watches are read on Linux by a few epoll loops (ReaderEpoll) that decode
// the chunked streams in place, rather than by a goroutine per watch
// through net/http's chunked reader (ReaderGoroutine, still used for TLS,
// h2c and h2). Clock ticks are assumed to be 1/100 s
// (USER_HZ on every Linux listwatch supports).
//
// # Bounds
//
// Every run is bounded: at most MaxWatchers watches and MaxDuration of
// writes, a bounded drain, and the child server is stopped (SIGTERM, then
// SIGKILL) on every exit path, including a cancelled context; it also gets
// SIGKILL if this process dies first. Every goroutine a run starts has
// ended when it returns.
package bench
