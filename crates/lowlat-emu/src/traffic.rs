//! Real traffic for tests and benchmarks: a CBR sender paced on the wall clock with the
//! simulator's CBR schedule, and a sink that counts what arrives and its one-way delay.
//!
//! Each datagram carries its sequence number and its send time (ns on a [`WallClock`] shared by
//! sender and sink in one process) in its first 16 bytes.

use crate::clock::{wait_readable, WallClock};
use hdrhistogram::Histogram;
use lowlat_core::{Bitrate, Duration, Time};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes of the sequence number and send time at the head of each datagram.
pub const STAMP: usize = 16;

/// Sends `size`-byte datagrams from `socket` to `dest` at `rate` for `duration`, packet `k` at
/// `start + k x size x 8 / rate` (the simulator's CBR schedule; a late wake-up sends the packets it
/// owes at once). `rate` `None`: as fast as the socket takes them. Returns the packets sent.
pub fn send_cbr(
    socket: &UdpSocket,
    dest: SocketAddr,
    rate: Option<Bitrate>,
    size: usize,
    duration: Duration,
    clock: WallClock,
) -> u64 {
    let size = size.max(STAMP);
    let mut buf = vec![0u8; size];
    let start = clock.now();
    let end = start + duration;
    let mut k: u64 = 0;
    loop {
        let due = match rate {
            Some(r) => {
                let ns = (k as u128 * size as u128 * 8 * 1_000_000_000) / u128::from(r.as_bps().max(1));
                start + Duration(ns as u64)
            }
            None => clock.now(),
        };
        if due >= end {
            return k;
        }
        clock.sleep_until(due);
        buf[..8].copy_from_slice(&k.to_be_bytes());
        buf[8..16].copy_from_slice(&clock.now().as_nanos().to_be_bytes());
        // A full socket buffer is loss, as on a real host.
        let _ = socket.send_to(&buf, dest);
        k += 1;
    }
}

/// What a [`sink`] received.
#[derive(Debug)]
pub struct SinkReport {
    /// Datagrams received.
    pub packets: u64,
    /// Bytes received.
    pub bytes: u64,
    /// First and last arrival.
    pub first: Option<Time>,
    /// Last arrival.
    pub last: Option<Time>,
    /// One-way delay (send stamp to arrival), ns.
    pub owd: Histogram<u64>,
}

/// Receives on `socket` until `stop` is set, counting datagrams and their one-way delays.
pub fn sink(socket: &UdpSocket, clock: WallClock, stop: &AtomicBool) -> SinkReport {
    socket.set_nonblocking(true).expect("a bound UDP socket can be made non-blocking");
    crate::relay::bigger_buffers(socket);
    let mut buf = vec![0u8; 65_536];
    let mut r = SinkReport {
        packets: 0,
        bytes: 0,
        first: None,
        last: None,
        owd: Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("static bounds are valid"),
    };
    let fd = socket.as_raw_fd();
    while !stop.load(Ordering::Relaxed) {
        match socket.recv_from(&mut buf) {
            Ok((n, _)) => {
                let now = clock.now();
                r.packets += 1;
                r.bytes += n as u64;
                r.first.get_or_insert(now);
                r.last = Some(now);
                if n >= STAMP {
                    let sent = u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"));
                    r.owd.saturating_record(now.as_nanos().saturating_sub(sent).max(1));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                wait_readable(&[fd], Some(10_000_000));
            }
            Err(_) => {}
        }
    }
    r
}
