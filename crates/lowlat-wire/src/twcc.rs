//! Transport-wide congestion control feedback (draft-holmer-rmcat-transport-wide-cc-extensions-01
//! §3.1): RTCP RTPFB, PT 205, FMT 15.
//!
//! ```text
//! | V=2|P| FMT=15 | PT=205 | length | sender SSRC | media SSRC |
//! | base sequence number (16) | packet status count (16) |
//! | reference time (24, signed, x 64 ms) | feedback packet count (8) |
//! | packet chunks (16 bits each) ... | receive deltas (8 or 16 bits each) ... | padding |
//! ```
//! A chunk is a run length (T=0: 2-bit symbol, 13-bit run) or a status vector (T=1; S=0: fourteen
//! 1-bit symbols, S=1: seven 2-bit symbols). Symbols: 0 not received, 1 received with a small
//! delta (one unsigned byte), 2 received with a large or negative delta (two signed bytes).
//! Deltas count 250 us, the first from the reference time, each next from the previous received
//! packet.

use crate::rtcp::{self, FMT_TRANSPORT_CC, PT_RTPFB};
use crate::{Reader, WireError};

/// Microseconds per reference-time unit.
pub const REFERENCE_TIME_US: i64 = 64_000;
/// Microseconds per receive-delta tick.
pub const DELTA_TICK_US: i64 = 250;

/// One transport-cc feedback packet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TransportCcFeedback {
    /// SSRC of the feedback's sender.
    pub sender_ssrc: u32,
    /// SSRC of the media source (any of the sender's streams).
    pub media_ssrc: u32,
    /// Transport-wide sequence number of the first packet covered.
    pub base_seq: u16,
    /// Reference time in 64 ms units, 24-bit signed (wraps).
    pub reference_time: i32,
    /// Feedback packet count (wraps).
    pub fb_pkt_count: u8,
    /// Per covered sequence number from `base_seq`: the receive delta in 250 us ticks, or `None`
    /// if not received.
    pub deltas: Vec<Option<i16>>,
}

fn symbol(d: Option<i16>) -> u8 {
    match d {
        None => 0,
        Some(0..=255) => 1,
        Some(_) => 2,
    }
}

impl TransportCcFeedback {
    /// Arrival times in microseconds, `reference_time x 64 ms + running sum of deltas`, per
    /// covered sequence number (wrapping); `None` if not received.
    pub fn arrivals_us(&self) -> Vec<(u16, Option<i64>)> {
        let mut t = i64::from(self.reference_time) * REFERENCE_TIME_US;
        let mut seq = self.base_seq;
        let mut out = Vec::with_capacity(self.deltas.len());
        for d in &self.deltas {
            let at = d.map(|d| {
                t += i64::from(d) * DELTA_TICK_US;
                t
            });
            out.push((seq, at));
            seq = seq.wrapping_add(1);
        }
        out
    }

    /// Decodes one RTCP packet (padding allowed, trailing bytes beyond its length ignored).
    pub fn decode(buf: &[u8]) -> Result<TransportCcFeedback, WireError> {
        let h = rtcp::header(buf)?;
        if (h.pt, h.fmt) != (PT_RTPFB, FMT_TRANSPORT_CC) {
            return Err(WireError::UnexpectedType { pt: h.pt, fmt: h.fmt });
        }
        let mut r = Reader::new(h.body);
        let sender_ssrc = r.u32()?;
        let media_ssrc = r.u32()?;
        let base_seq = r.u16()?;
        let count = r.u16()? as usize;
        let rt = r.take(3)?;
        let raw = (u32::from(rt[0]) << 16) | (u32::from(rt[1]) << 8) | u32::from(rt[2]);
        let reference_time = ((raw << 8) as i32) >> 8; // sign-extend 24 bits
        let fb_pkt_count = r.u8()?;
        // A 2-byte chunk covers at most 8191 statuses: reject a count the body cannot hold
        // before allocating for it.
        if count > 8191 * r.remaining() / 2 {
            return Err(WireError::BadLength("status count larger than the chunks can hold"));
        }
        let mut symbols = Vec::with_capacity(count);
        while symbols.len() < count {
            let c = r.u16()?;
            let need = count - symbols.len();
            if c & 0x8000 == 0 {
                let s = ((c >> 13) & 0x3) as u8;
                let run = (c & 0x1fff) as usize;
                if run == 0 {
                    return Err(WireError::Invalid("run-length chunk of length 0"));
                }
                symbols.extend(std::iter::repeat_n(s, run.min(need)));
            } else if c & 0x4000 == 0 {
                symbols.extend((0..14).rev().map(|i| ((c >> i) & 1) as u8).take(need));
            } else {
                symbols.extend((0..7).rev().map(|i| ((c >> (2 * i)) & 3) as u8).take(need));
            }
        }
        let mut deltas = Vec::with_capacity(count);
        for s in symbols {
            deltas.push(match s {
                0 => None,
                1 => Some(i16::from(r.u8()?)),
                2 => Some(r.u16()? as i16),
                _ => return Err(WireError::Invalid("reserved status symbol 3")),
            });
        }
        Ok(TransportCcFeedback { sender_ssrc, media_ssrc, base_seq, reference_time, fb_pkt_count, deltas })
    }

    /// What [`TransportCcFeedback::decode`] and then [`TransportCcFeedback::arrivals_us`] give,
    /// handed to `f` one sequence number at a time, without building either list: a sender that
    /// reads a report every millisecond (Zhuge's) allocated three lists per report. Fails exactly
    /// when `decode` does, with the same error; `f` may have been called for the sequence numbers
    /// before a malformed delta.
    pub fn decode_arrivals(buf: &[u8], mut f: impl FnMut(u16, Option<i64>)) -> Result<(), WireError> {
        let h = rtcp::header(buf)?;
        if (h.pt, h.fmt) != (PT_RTPFB, FMT_TRANSPORT_CC) {
            return Err(WireError::UnexpectedType { pt: h.pt, fmt: h.fmt });
        }
        let mut r = Reader::new(h.body);
        let _sender_ssrc = r.u32()?;
        let _media_ssrc = r.u32()?;
        let base_seq = r.u16()?;
        let count = r.u16()? as usize;
        let rt = r.take(3)?;
        let raw = (u32::from(rt[0]) << 16) | (u32::from(rt[1]) << 8) | u32::from(rt[2]);
        let reference_time = ((raw << 8) as i32) >> 8; // sign-extend 24 bits
        let _fb_pkt_count = r.u8()?;
        if count > 8191 * r.remaining() / 2 {
            return Err(WireError::BadLength("status count larger than the chunks can hold"));
        }
        // First pass: the chunks, checked as `decode` reads them, to find where the deltas start.
        let chunks_at = r.pos();
        let mut covered = 0;
        while covered < count {
            let c = r.u16()?;
            let need = count - covered;
            covered += if c & 0x8000 == 0 {
                let run = (c & 0x1fff) as usize;
                if run == 0 {
                    return Err(WireError::Invalid("run-length chunk of length 0"));
                }
                run.min(need)
            } else if c & 0x4000 == 0 {
                14.min(need)
            } else {
                7.min(need)
            };
        }
        // Second pass: the statuses again, each with its delta from `r`.
        let mut chunks = Reader::new(&h.body[chunks_at..r.pos()]);
        let mut t = i64::from(reference_time) * REFERENCE_TIME_US;
        let mut seq = base_seq;
        let mut status = |s: u16, r: &mut Reader| -> Result<(), WireError> {
            let d = match s {
                0 => None,
                1 => Some(i16::from(r.u8()?)),
                2 => Some(r.u16()? as i16),
                _ => return Err(WireError::Invalid("reserved status symbol 3")),
            };
            let at = d.map(|d| {
                t += i64::from(d) * DELTA_TICK_US;
                t
            });
            f(seq, at);
            seq = seq.wrapping_add(1);
            Ok(())
        };
        let mut left = count;
        while left > 0 {
            let c = chunks.u16()?;
            if c & 0x8000 == 0 {
                let run = ((c & 0x1fff) as usize).min(left);
                for _ in 0..run {
                    status((c >> 13) & 0x3, &mut r)?;
                }
                left -= run;
            } else if c & 0x4000 == 0 {
                let k = 14.min(left);
                for i in 0..k {
                    status((c >> (13 - i)) & 1, &mut r)?;
                }
                left -= k;
            } else {
                let k = 7.min(left);
                for i in 0..k {
                    status((c >> (2 * (6 - i))) & 3, &mut r)?;
                }
                left -= k;
            }
        }
        Ok(())
    }

    /// The packet chunks encoding the statuses ([`walk_chunks`]) into `out` (cleared first), with
    /// `sym` as scratch.
    fn chunks_into(&self, sym: &mut Vec<u8>, out: &mut Vec<u16>) {
        self.symbols_into(sym);
        out.clear();
        walk_chunks(sym, |i, kind| {
            out.push(match kind {
                Chunk::Run(run) => (u16::from(sym[i]) << 13) | run as u16,
                Chunk::OneBit => {
                    let mut c = 0x8000u16;
                    for (k, &x) in sym[i..sym.len().min(i + 14)].iter().enumerate() {
                        c |= u16::from(x) << (13 - k);
                    }
                    c
                }
                Chunk::TwoBit => {
                    let mut c = 0xc000u16;
                    for (k, &x) in sym[i..sym.len().min(i + 7)].iter().enumerate() {
                        c |= u16::from(x) << (2 * (6 - k));
                    }
                    c
                }
            });
        });
    }

    /// The status symbols into `sym` (cleared first).
    fn symbols_into(&self, sym: &mut Vec<u8>) {
        sym.clear();
        sym.extend(self.deltas.iter().map(|d| symbol(*d)));
    }

    /// Appends the packet to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), WireError> {
        self.encode_with(out, &mut EncodeScratch::default())
    }

    /// [`TransportCcFeedback::encode`] with reusable scratch space.
    fn encode_with(&self, out: &mut Vec<u8>, scratch: &mut EncodeScratch) -> Result<(), WireError> {
        let count =
            u16::try_from(self.deltas.len()).map_err(|_| WireError::BadLength("over 65535 statuses"))?;
        if !(-(1 << 23)..(1 << 23)).contains(&self.reference_time) {
            return Err(WireError::Invalid("reference time outside 24 bits"));
        }
        self.chunks_into(&mut scratch.symbols, &mut scratch.chunks);
        let chunks = &scratch.chunks;
        let delta_bytes: usize = self.deltas.iter().map(|d| usize::from(symbol(*d))).sum();
        let body_len = 16 + 2 * chunks.len() + delta_bytes;
        let pad = rtcp::write_header(out, FMT_TRANSPORT_CC, PT_RTPFB, body_len)?;
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        out.extend_from_slice(&self.media_ssrc.to_be_bytes());
        out.extend_from_slice(&self.base_seq.to_be_bytes());
        out.extend_from_slice(&count.to_be_bytes());
        out.extend_from_slice(&(self.reference_time as u32 & 0x00ff_ffff).to_be_bytes()[1..]);
        out.push(self.fb_pkt_count);
        for c in chunks {
            out.extend_from_slice(&c.to_be_bytes());
        }
        for d in self.deltas.iter().flatten() {
            match symbol(Some(*d)) {
                1 => out.push(*d as u8),
                _ => out.extend_from_slice(&d.to_be_bytes()),
            }
        }
        rtcp::write_padding(out, pad);
        Ok(())
    }

    /// The encoded length in bytes.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len_with(&mut EncodeScratch::default())
    }

    /// [`TransportCcFeedback::encoded_len`] with reusable scratch space: counts the chunks
    /// without writing them.
    fn encoded_len_with(&self, scratch: &mut EncodeScratch) -> usize {
        self.symbols_into(&mut scratch.symbols);
        let mut chunks = 0;
        walk_chunks(&scratch.symbols, |_, _| chunks += 1);
        let delta_bytes: usize = scratch.symbols.iter().map(|&s| usize::from(s)).sum();
        // Header (12) + base, count, reference time and feedback count (8), padded to words.
        (20 + 2 * chunks + delta_bytes).div_ceil(4) * 4
    }
}

/// A packet chunk: a run of `.0` equal symbols, or a vector of 14 one-bit or 7 two-bit symbols
/// (the last one may cover fewer).
#[derive(Clone, Copy, Debug)]
enum Chunk {
    Run(usize),
    OneBit,
    TwoBit,
}

/// Splits the status symbols into chunks, calling `f(first symbol, chunk)` for each in order:
/// run lengths for runs, one-bit vectors where no large delta is near, two-bit vectors
/// otherwise. Shared by the encoder and the length count so the two always agree.
fn walk_chunks(sym: &[u8], mut f: impl FnMut(usize, Chunk)) {
    let n = sym.len();
    let mut i = 0;
    while i < n {
        let s = sym[i];
        let mut run = 1;
        while i + run < n && sym[i + run] == s && run < 0x1fff {
            run += 1;
        }
        if run >= 14 || run == n - i || (s == 2 && run >= 7) {
            f(i, Chunk::Run(run));
            i += run;
        } else if sym[i..n.min(i + 14)].iter().all(|&x| x <= 1) {
            f(i, Chunk::OneBit);
            i += 14;
        } else {
            f(i, Chunk::TwoBit);
            i += 7;
        }
    }
}

/// Scratch space of an encoding: the status symbols and the chunks.
#[derive(Clone, Debug, Default)]
struct EncodeScratch {
    symbols: Vec<u8>,
    chunks: Vec<u16>,
}

/// Builds transport-cc feedback from what a receiver saw, splitting it into packets that each
/// stay within `max_len` bytes and whose deltas fit their fields.
#[derive(Clone, Debug)]
pub struct TwccBuilder {
    /// SSRC written as the feedback's sender.
    pub sender_ssrc: u32,
    /// SSRC written as the media source.
    pub media_ssrc: u32,
    /// Largest RTCP packet to produce (1200 B by default).
    pub max_len: usize,
    /// The next feedback packet count.
    pub fb_pkt_count: u8,
    /// [`TwccBuilder::encode_into`]'s packet, its delta list reused.
    packet: TransportCcFeedback,
    scratch: EncodeScratch,
}

impl TwccBuilder {
    /// A builder for the given SSRCs.
    pub fn new(sender_ssrc: u32, media_ssrc: u32) -> TwccBuilder {
        TwccBuilder {
            sender_ssrc,
            media_ssrc,
            max_len: 1200,
            fb_pkt_count: 0,
            packet: TransportCcFeedback::default(),
            scratch: EncodeScratch::default(),
        }
    }

    /// Feedback for consecutive sequence numbers from `base_seq`, with arrival times in
    /// microseconds (`None`: not received). Each delta is rounded from the running rounded time,
    /// so rounding errors never accumulate.
    pub fn build(&mut self, base_seq: u16, arrivals: &[Option<i64>]) -> Vec<TransportCcFeedback> {
        let mut out = Vec::new();
        let mut start = 0;
        while start < arrivals.len() {
            let mut fb = TransportCcFeedback::default();
            start += self.fill(base_seq, arrivals, start, &mut fb);
            out.push(fb);
        }
        out
    }

    /// Encodes the packets [`TwccBuilder::build`] returns, one after another, into `out` (the
    /// same bytes), without allocating once its scratch space has grown: a receiver (or Zhuge's
    /// access point) that reports every few milliseconds sizes each report this way.
    pub fn encode_into(&mut self, base_seq: u16, arrivals: &[Option<i64>], out: &mut Vec<u8>) {
        let mut packet = std::mem::take(&mut self.packet);
        let mut start = 0;
        while start < arrivals.len() {
            start += self.fill(base_seq, arrivals, start, &mut packet);
            // Invariant: the builder only produces encodable packets.
            packet.encode_with(out, &mut self.scratch).expect("built feedback encodes");
        }
        self.packet = packet;
    }

    /// The number of bytes [`TwccBuilder::encode_into`] would write for these arrivals, worked
    /// out without writing them; advances the feedback packet count the same way.
    pub fn encoded_len(&mut self, arrivals: &[Option<i64>]) -> usize {
        if let Some(len) = self.small_deltas_len(arrivals) {
            return len;
        }
        // Only the status symbols matter for the length: they are made straight from the
        // arrivals, without the packet's delta list (a receiver sizes hundreds per report).
        let mut sym = std::mem::take(&mut self.scratch.symbols);
        let (mut start, mut len) = (0, 0);
        while start < arrivals.len() {
            let delta_bytes = self.fill_symbols(arrivals, start, &mut sym);
            start += sym.len();
            let mut chunks = 0;
            walk_chunks(&sym, |_, _| chunks += 1);
            // As `TransportCcFeedback::encoded_len_with`.
            len += (20 + 2 * chunks + delta_bytes).div_ceil(4) * 4;
        }
        self.scratch.symbols = sym;
        len
    }

    /// [`TwccBuilder::encoded_len`] of the usual report, in one pass without symbols: every
    /// packet received, each delta within 0..=255 ticks (one-byte, so one run chunk) and the
    /// whole report in one packet. `None` when the report is not such (the general count then
    /// applies); the feedback packet count advances only on `Some`.
    fn small_deltas_len(&mut self, arrivals: &[Option<i64>]) -> Option<usize> {
        let n = arrivals.len();
        let room = self.max_len.checked_sub(20 + 3)?;
        // One run chunk holds at most 0x1fff symbols; the packet must not be cut.
        if n == 0 || n > 0x1fff || 2 * n.div_ceil(7) + n > room {
            return None;
        }
        // Times in ticks: the running time `t` of `fill_symbols` stays a whole number of ticks
        // (the reference time is 256 ticks), so each delta is the arrival's rounded tick minus
        // the last one's. Times before zero are left to the general count (unsigned division).
        const TICK: u64 = DELTA_TICK_US as u64;
        let first = u64::try_from(arrivals[0]?).ok()?;
        let mut tick = first / REFERENCE_TIME_US as u64 * (REFERENCE_TIME_US as u64 / TICK);
        for a in arrivals {
            let a = u64::try_from((*a)?).ok()?;
            let q = (a + TICK / 2) / TICK;
            if q.wrapping_sub(tick) > 255 {
                return None;
            }
            tick = q;
        }
        self.fb_pkt_count = self.fb_pkt_count.wrapping_add(1);
        // As `TransportCcFeedback::encoded_len_with`: one chunk, one delta byte per packet.
        Some((20 + 2 + n).div_ceil(4) * 4)
    }

    /// [`TwccBuilder::fill`] for the length only: the status symbols of the packet it would
    /// fill into `sym` (cleared first), the same statuses cut at the same place; returns the
    /// packet's delta bytes. Advances the feedback packet count as `fill` does.
    fn fill_symbols(&mut self, arrivals: &[Option<i64>], start: usize, sym: &mut Vec<u8>) -> usize {
        let first = arrivals[start..].iter().flatten().next().copied().unwrap_or(0);
        let mut t = first.div_euclid(REFERENCE_TIME_US) * REFERENCE_TIME_US;
        sym.clear();
        let rest = &arrivals[start..arrivals.len().min(start + 0xffff)];
        sym.reserve(rest.len());
        let mut delta_bytes = 0;
        for a in rest {
            let s = match *a {
                None => 0,
                Some(a) => {
                    let ticks = (a - t + DELTA_TICK_US / 2).div_euclid(DELTA_TICK_US);
                    let Ok(v) = i16::try_from(ticks) else { break };
                    t += i64::from(v) * DELTA_TICK_US;
                    let s = symbol(Some(v));
                    delta_bytes += usize::from(s);
                    s
                }
            };
            sym.push(s);
        }
        let room = self.max_len.checked_sub(20 + 3);
        let fits = |n: usize, delta_bytes: usize| room.is_some_and(|r| 2 * n.div_ceil(7) + delta_bytes <= r);
        if sym.len() > 1 && !fits(sym.len(), delta_bytes) {
            let mut bytes = 0;
            let cut = sym.iter().enumerate().position(|(k, &s)| {
                bytes += usize::from(s);
                k > 0 && !fits(k + 1, bytes)
            });
            sym.truncate(cut.unwrap_or(sym.len()));
            delta_bytes = sym.iter().map(|&s| usize::from(s)).sum();
        }
        self.fb_pkt_count = self.fb_pkt_count.wrapping_add(1);
        delta_bytes
    }

    /// Fills `fb` with the next packet, covering `arrivals[start..]` as far as it fits; returns
    /// how many sequence numbers it covers (at least one).
    fn fill(
        &mut self,
        base_seq: u16,
        arrivals: &[Option<i64>],
        start: usize,
        fb: &mut TransportCcFeedback,
    ) -> usize {
        let first = arrivals[start..].iter().flatten().next().copied().unwrap_or(0);
        let reference = first.div_euclid(REFERENCE_TIME_US);
        let mut t = reference * REFERENCE_TIME_US;
        fb.sender_ssrc = self.sender_ssrc;
        fb.media_ssrc = self.media_ssrc;
        fb.base_seq = base_seq.wrapping_add(start as u16);
        // Wrap to 24 bits, sign-extended, as the field carries it.
        fb.reference_time = ((reference as i32) << 8) >> 8;
        fb.fb_pkt_count = self.fb_pkt_count;
        fb.deltas.clear();
        // The deltas up to the first that does not fit its field (it starts a new packet with
        // its own reference), then cut where the packet would outgrow `max_len`: that bound grows
        // with every status, so when the whole run fits (a report usually does) no status is
        // checked against it.
        let rest = &arrivals[start..arrivals.len().min(start + 0xffff)];
        fb.deltas.reserve(rest.len());
        let mut delta_bytes = 0;
        for a in rest {
            let d = match *a {
                None => None,
                Some(a) => {
                    let ticks = (a - t + DELTA_TICK_US / 2).div_euclid(DELTA_TICK_US);
                    let Ok(v) = i16::try_from(ticks) else { break };
                    t += i64::from(v) * DELTA_TICK_US;
                    delta_bytes += usize::from(symbol(Some(v)));
                    Some(v)
                }
            };
            fb.deltas.push(d);
        }
        // What `max_len` leaves for chunks and deltas after the header (20 B) and up to 3 B of
        // padding (None: room for the first status only). Upper bound on the chunks: every 7
        // statuses may need one of their own.
        let room = self.max_len.checked_sub(20 + 3);
        let fits = |n: usize, delta_bytes: usize| room.is_some_and(|r| 2 * n.div_ceil(7) + delta_bytes <= r);
        if fb.deltas.len() > 1 && !fits(fb.deltas.len(), delta_bytes) {
            let mut bytes = 0;
            let cut = fb.deltas.iter().enumerate().position(|(k, &d)| {
                bytes += usize::from(symbol(d));
                k > 0 && !fits(k + 1, bytes)
            });
            fb.deltas.truncate(cut.unwrap_or(fb.deltas.len()));
        }
        self.fb_pkt_count = self.fb_pkt_count.wrapping_add(1);
        fb.deltas.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `TwccBuilder::fill`'s deltas as a loop that checks the length bound at every status (its
    /// first form), for the two-pass version to match.
    fn fill_checking_each(max_len: usize, arrivals: &[Option<i64>]) -> Vec<Option<i16>> {
        let first = arrivals.iter().flatten().next().copied().unwrap_or(0);
        let mut t = first.div_euclid(REFERENCE_TIME_US) * REFERENCE_TIME_US;
        let (mut deltas, mut delta_bytes) = (Vec::new(), 0);
        for a in arrivals {
            let d = match a {
                None => None,
                Some(a) => match i16::try_from((a - t + DELTA_TICK_US / 2).div_euclid(DELTA_TICK_US)) {
                    Ok(v) => Some(v),
                    Err(_) => break,
                },
            };
            let n = deltas.len() + 1;
            let extra = usize::from(symbol(d));
            if !deltas.is_empty() && 20 + 2 * n.div_ceil(7) + delta_bytes + extra + 3 > max_len || n > 0xffff
            {
                break;
            }
            if let Some(v) = d {
                t += i64::from(v) * DELTA_TICK_US;
            }
            delta_bytes += extra;
            deltas.push(d);
        }
        deltas
    }

    /// Arrival times (µs; `None`: lost) of 1 to `most - 1` packets: gaps from none to beyond a
    /// 2-byte delta, some negative, a fifth of the packets lost.
    fn random_arrivals(rng: &mut rand_pcg::Pcg64Mcg, most: usize) -> Vec<Option<i64>> {
        let mut t: i64 = rng.random_range(-1_000_000..1_000_000);
        (0..rng.random_range(1..most))
            .map(|_| {
                t += match rng.random_range(0..10) {
                    0 => rng.random_range(0..9_000_000), // beyond a 2-byte delta
                    1 => -rng.random_range(0..50_000),
                    2..=4 => rng.random_range(0..300),
                    _ => rng.random_range(0..70_000),
                };
                rng.random_bool(0.8).then_some(t)
            })
            .collect()
    }

    #[test]
    fn fill_cuts_where_a_per_status_check_does() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(9);
        let mut builder = TwccBuilder::new(1, 2);
        let mut fb = TransportCcFeedback::default();
        let mut cut = 0;
        for case in 0..3000 {
            let max_len = rng.random_range(0..400);
            let arrivals = random_arrivals(&mut rng, 500);
            builder.max_len = max_len;
            let n = builder.fill(0, &arrivals, 0, &mut fb);
            let expected = fill_checking_each(max_len, &arrivals);
            assert_eq!(fb.deltas, expected, "case {case}");
            assert_eq!(n, expected.len(), "case {case}");
            cut += usize::from(n < arrivals.len());
        }
        assert!(cut > 1000, "the bound and the field width both cut often: {cut}");
    }

    /// Written by hand from the draft: base 100, 20 statuses, reference time 1 (64 ms),
    /// fb count 7; chunks: run of 14 "small", then a one-bit vector 0,1,1,0,1,1 (+8 zero pads);
    /// deltas 4,1,...
    #[test]
    fn run_length_and_one_bit_vector_known_bytes() {
        let mut deltas: Vec<Option<i16>> = vec![Some(4); 14];
        deltas.extend([None, Some(1), Some(2), None, Some(3), Some(255)]);
        let fb = TransportCcFeedback {
            sender_ssrc: 0x11223344,
            media_ssrc: 0x55667788,
            base_seq: 100,
            reference_time: 1,
            fb_pkt_count: 7,
            deltas,
        };
        let mut bytes = vec![
            0xa0 | 15,
            205,
            0x00,
            0x0a, // P=1 (2 pad bytes), length 10 -> 44 bytes
            0x11,
            0x22,
            0x33,
            0x44,
            0x55,
            0x66,
            0x77,
            0x88, //
            0x00,
            100,
            0x00,
            20,
            0x00,
            0x00,
            0x01,
            7, //
            0x20,
            14, // run length: T=0, S=01, run 14
            0b1001_1011,
            0b0000_0000, // one-bit vector: 1 0 | 0 1 1 0 1 1 0 0 0 0 0 0 0 0
        ];
        bytes.extend(std::iter::repeat_n(4u8, 14));
        bytes.extend([1, 2, 3, 255]);
        bytes.extend([0, 2]); // padding, count 2
        assert_eq!(bytes.len(), 44);
        let mut out = Vec::new();
        fb.encode(&mut out).unwrap();
        assert_eq!(out, bytes);
        assert_eq!(TransportCcFeedback::decode(&bytes).unwrap(), fb);
        assert_eq!(fb.encoded_len(), 44);
        let a = fb.arrivals_us();
        assert_eq!(a[0], (100, Some(64_000 + 1000)));
        assert_eq!(a[14], (114, None));
        assert_eq!(a[19], (119, Some(64_000 + 14 * 1000 + (1 + 2 + 3 + 255) * 250)));
    }

    /// A two-bit vector with a large and a negative delta, negative reference time.
    #[test]
    fn two_bit_vector_with_large_and_negative_deltas_known_bytes() {
        let fb = TransportCcFeedback {
            sender_ssrc: 1,
            media_ssrc: 2,
            base_seq: 65534, // wraps within the packet
            reference_time: -2,
            fb_pkt_count: 255,
            deltas: vec![Some(10), Some(1000), None, Some(-4)],
        };
        let bytes = vec![
            0xa0 | 15,
            205,
            0x00,
            0x06, // 28 bytes, 1 pad byte
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            2, //
            0xff,
            0xfe,
            0x00,
            0x04,
            0xff,
            0xff,
            0xfe,
            0xff, //
            0b1101_1000,
            0b1000_0000, // two-bit vector: 01 10 00 10 | 00 00 00
            10,
            0x03,
            0xe8,
            0xff,
            0xfc,
            0x01, // deltas 10, 1000, -4; pad count 1
        ];
        let mut out = Vec::new();
        fb.encode(&mut out).unwrap();
        assert_eq!(out, bytes);
        let d = TransportCcFeedback::decode(&bytes).unwrap();
        assert_eq!(d, fb);
        let a = d.arrivals_us();
        assert_eq!(a[1].0, 65535);
        assert_eq!(a[2].0, 0);
        assert_eq!(a[3].1, Some(-128_000 + (10 + 1000 - 4) * 250));
    }

    #[test]
    fn builder_splits_on_delta_overflow_and_size() {
        let mut b = TwccBuilder::new(1, 2);
        // A 10 s gap cannot be a 16-bit delta (max 8.19 s).
        let arrivals = [Some(1_000_000), Some(1_000_250), Some(11_000_000), Some(11_000_500)];
        let fbs = b.build(10, &arrivals);
        assert_eq!(fbs.len(), 2);
        assert_eq!((fbs[0].base_seq, fbs[0].deltas.len(), fbs[1].base_seq), (10, 2, 12));
        assert_eq!((fbs[0].fb_pkt_count, fbs[1].fb_pkt_count), (0, 1));
        let got: Vec<i64> = fbs.iter().flat_map(|f| f.arrivals_us()).filter_map(|a| a.1).collect();
        assert_eq!(got, vec![1_000_000, 1_000_250, 11_000_000, 11_000_500]);
        // 2000 large deltas do not fit one 1200-byte packet.
        let many: Vec<Option<i64>> = (0..2000).map(|i| Some(i * 100_000)).collect();
        let fbs = b.build(0, &many);
        assert!(fbs.len() > 1);
        for f in &fbs {
            let mut out = Vec::new();
            f.encode(&mut out).unwrap();
            assert!(out.len() <= 1200, "{}", out.len());
        }
    }

    #[test]
    fn encoded_len_matches_the_bytes_written() {
        // Reports with and without the one-pass count's shape: deltas at the one-byte edges
        // (255 and 256 ticks, half-tick rounding), losses, times before zero, long reports.
        let mut rng = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        let steps = [0, 1, 124, 125, 126, 249, 250, 63_749, 63_750, 63_874, 63_875, 64_000, 100_000];
        for case in 0..3000 {
            let n = [1, 2, 7, 14, 300, 800, 900, 1200][case % 8];
            let mut t = next(200_000) as i64 - if case % 5 == 0 { 100_000 } else { 0 };
            let loss = [0, 0, 50, 1000][case % 4];
            let arrivals: Vec<Option<i64>> = (0..n)
                .map(|_| {
                    t += steps[next(steps.len() as u64) as usize].min(if case % 3 == 0 {
                        600
                    } else {
                        i64::MAX
                    });
                    (next(1000) >= loss).then_some(t)
                })
                .collect();
            let mut sized = TwccBuilder::new(1, 2);
            sized.fb_pkt_count = case as u8;
            let mut written = sized.clone();
            let len = sized.encoded_len(&arrivals);
            let mut out = Vec::new();
            written.encode_into(7, &arrivals, &mut out);
            assert_eq!(len, out.len(), "case {case}");
            assert_eq!(sized.fb_pkt_count, written.fb_pkt_count, "case {case}");
        }
    }
}
