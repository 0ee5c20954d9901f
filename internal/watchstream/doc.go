// Package watchstream is the watch streaming engine: it writes the events
// of the watch caches (internal/watchcache) to the watches' connections,
// without a goroutine or a buffer per idle watch. internal/server parses
// and authorizes a watch request, then hands it here with its Options
// (an Encoder, the negotiated form) and its watcher: Engine.Open,
// Stream.WatchOptions (the watcher's Waker), Stream.Serve.
//
//	watch cache ──Wake, WakePolled(batch)──▶ Engine: sender pool (GOMAXPROCS-1 goroutines)
//	     │                                        │ serves a detachedWatch: Pending, one write
//	     │ lanes: ServeLane                       ▼
//	     └──────────────────────────────▶ streamSink, the transport (one per watch)
//	                                        ├─ connSink: HTTP/1.1 chunks in cleartext (one
//	                                        │    writev), over TLS on a socketConn (tls.go),
//	                                        │    or WebSocket messages (websocket.go)
//	                                        └─ h2Sink: DATA frames of an internal/h2 stream
//
// A lane (watchcache.LaneBlock) holds the chunked HTTP/1.1 JSON watches
// (cleartext, or TLS on a socketConn) level with their cache: ServeLane
// sends each a batch's shared chunk through its laneConn, without serving
// the watch (pool.go, laneWriter).
//
// # The detached watch
//
// A watch whose transport allows it (HTTP/1.1 hijacked from net/http in
// cleartext, over TLS on a Listener connection, a WebSocket, or an HTTP/2
// stream of internal/h2) is detached: its handler returns, and whoever
// serves the watch is its only writer. Its sendState says who that is:
//
//	state      who serves it                 a Wake
//	starting   nobody yet (detach)            is remembered (again)
//	idle       nobody: nothing pending        queues it on the pool
//	queued     waiting on the pool            nothing
//	running    a sender                       serves it again after (again)
//	laned      its lane's ServeLane           takes it out of the lane, queues it
//	dedicated  its own goroutine (a slow      wakes that goroutine
//	           client, or a catch-up)
//	finished   nobody: it has ended           nothing
//
// A sender never waits on a socket: a write the socket does not take
// whole leaves the rest in the sink (stalled), and the watch gets its own
// goroutine until the rest is written and the watch is level with its
// cache. A watch ends for one endReason (its timeout, the engine's close,
// the client gone, an error sent, a WebSocket close) when it is next
// served; finish writes the end (a last bookmark at a timeout, the
// terminating chunk or close frame) with its writes bounded by
// EndWriteGrace.
//
// # Shared bytes
//
// Every plain JSON watch of an event sends the same frame (frame.go),
// made once with its chunk framing; an HTTP/2 stream sends it inside DATA
// frames, a WebSocket inside a text frame.
//
// # Descriptors
//
// No write can reach a descriptor the system has given to another
// connection. A write through the connection goes through sockwrite.Writer
// (syscall.RawConn.Write, the net package's descriptor lock: after Close it
// fails without touching the descriptor). A cleartext lane's laneConn and a TLS
// watch's socketConn write through a duplicate of the socket's descriptor
// of their own (sockwrite.Writer.Dup), closed only once no write of theirs
// can follow (LaneSink.Release; socketConn's Close, or the write holding
// its lock then), so that their number is no other socket's while they may
// write it, and a send reads none of the net package's state.
//
// # Concurrency
//
// The locks are taken in internal/lockrank's order: the cache's, a lane
// block's, detachedWatch.mu, the watcher's, senderPool.mu. Every goroutine
// (senders, readers, dedicated servers) is the Engine's; Close ends every
// watch and waits for them.
package watchstream
