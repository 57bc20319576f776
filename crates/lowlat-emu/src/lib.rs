//! lowlat's emulator: the simulator's links, queues, traces, jitter and loss driven on the wall
//! clock, forwarding real UDP datagrams (ARCHITECTURE.md, "One model, two clocks").
//!
//! The components are the unchanged sans-IO machines of `lowlat-net`: this crate only owns the
//! clock and the sockets.
//!
//! - [`clock`]: the wall clock as lowlat [`Time`](lowlat_core::Time) and precise waits.
//! - [`network`]: a scenario's forward and reverse paths (access, bottleneck, egress links) for one
//!   relayed flow, moved along on whatever clock the caller has.
//! - [`relay`]: the UDP relay (`lowlat emulate`): datagrams in both directions through the paths,
//!   counted, measured, and written as the simulator's `summary.json` and series, plus a pcap.
//! - [`pcap`]: the pcap writer.
//! - [`quic`]: the wire format of lowlat's transport on real sockets (QUIC-shaped data and ACK packets).
//! - [`transport`]: lowlat's transport sender and receiver on real sockets (`lowlat send`/`receive` for a bulk flow).
//! - [`traffic`]: a paced CBR sender and a counting sink for real sockets (tests, `lowlat bench`).
//! - [`endpoint`]: the results contract (summary.json, series) of one `lowlat send`/`receive` endpoint.
//! - [`bench`]: the relay's added delay, throughput limit and timer error.
//! - [`shell`]: the link shell (`lowlat shell`): IP packets between two TUN devices through the paths.
//!
//! The event loop is a single thread on `ppoll(2)`, not an async runtime: tokio's and mio's
//! timeouts have millisecond granularity, and a link at 100 Mbit/s needs its departures within
//! tens of microseconds. `ppoll` takes a nanosecond timeout on an hrtimer, the thread's timer slack
//! is set to 1 ns, and the last few microseconds before a deadline are spun. Receives are batched
//! with `recvmmsg(2)`. Linux only.

pub mod bench;
pub mod clock;
pub mod endpoint;
pub mod network;
pub mod pcap;
pub mod quic;
pub mod relay;
pub mod rtp;
pub mod shell;
pub mod traffic;
pub mod transport;

pub use network::Network;
pub use relay::{Relay, RelayConfig, RelayCounters, RelayReport};
