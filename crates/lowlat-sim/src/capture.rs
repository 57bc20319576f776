//! A pcap of the packets the endpoints send (`lowlat run --pcap FILE`), so a run can be read in
//! Wireshark.
//!
//! The simulator moves packet sizes, not bytes; the capture writes each packet as the bytes it
//! stands for, with its real size: RTP video as RTP with the transport-wide sequence extension
//! (id 5) on port 5004 + 2k, its feedback as the RTCP the receiver encoded (transport-cc or RFC
//! 8888) on 5005 + 2k; transport datagrams (bulk, web, video over the transport) on 6000 + k,
//! data from 10.0.0.1 and ACKs from 10.0.0.2, as a type byte (1 data, 2 ACK) and the 64-bit
//! packet number; CBR and Poisson packets on 7000 + k as a 64-bit sequence number. The rest of
//! each payload is zeros. Feedback a middlebox writes (Zhuge's) is not captured. Decode with
//! `tshark -r FILE -d udp.port==5004,rtp -d udp.port==5005,rtcp` (one pair per video flow).

use crate::app::Transmit;
use crate::scenario::{is_window_controller, FlowConfig};
use lowlat_core::Time;
use lowlat_wire::pcap::PcapWriter;
use lowlat_wire::RtpHeader;

/// IPv4 and UDP headers, bytes.
const IP_UDP: usize = 28;
/// The sender's and the receiver's addresses.
const SENDER: [u8; 4] = [10, 0, 0, 1];
const RECEIVER: [u8; 4] = [10, 0, 0, 2];
/// The SSRC of every video flow (the feedback encoder's media SSRC).
const MEDIA_SSRC: u32 = 2;
/// RTP clock of video, Hz.
const VIDEO_CLOCK: f64 = 90_000.0;

/// How a flow's packets are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Rtp { fps_milli: u64 },
    Transport,
    Plain,
}

/// The capture being written.
#[derive(Debug, Default)]
pub struct Capture {
    pcap: PcapWriter,
    buf: Vec<u8>,
    packets: u64,
}

fn kind(flow: &FlowConfig) -> Kind {
    match (&flow.media, &flow.transport) {
        (Some(m), None) if !is_window_controller(&m.cc) => {
            Kind::Rtp { fps_milli: (m.source.fps * 1000.0).round().max(1.0) as u64 }
        }
        (_, Some(_)) | (Some(_), None) => Kind::Transport,
        (None, None) => Kind::Plain,
    }
}

impl Capture {
    /// An empty capture.
    pub fn new() -> Capture {
        Capture::default()
    }

    /// Packets recorded.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Records what flow `index` (`flow`) sent at `now`: from its sender when `from_sender`, else
    /// from its receiver; `payload` is the bytes the endpoint encoded, if it did.
    pub fn record(
        &mut self,
        now: Time,
        index: u32,
        flow: &FlowConfig,
        from_sender: bool,
        t: &Transmit,
        payload: Option<&[u8]>,
    ) {
        let size = (t.size.0 as usize).saturating_sub(IP_UDP);
        self.buf.clear();
        let k = u16::try_from(index).unwrap_or(u16::MAX / 4) % 400;
        let (base_src, base_dst) = match kind(flow) {
            Kind::Rtp { fps_milli } => {
                if from_sender {
                    let (frame, _) = crate::media::unpack(t.app);
                    let last = crate::media::unpack_index(t.app) + 1 == crate::media::unpack(t.app).1;
                    let padding = t.app == u64::MAX;
                    let ts = if padding {
                        0
                    } else {
                        (frame as f64 * VIDEO_CLOCK * 1000.0 / fps_milli as f64) as u64
                    };
                    let h = RtpHeader {
                        marker: !padding && last,
                        payload_type: 96,
                        sequence_number: t.seq as u16,
                        timestamp: ts as u32,
                        ssrc: MEDIA_SSRC,
                        csrcs: vec![],
                        transport_seq: Some(t.seq as u16),
                    };
                    // Invariant: a payload type below 128 and id 5 always encode.
                    h.encode(lowlat_wire::rtp::DEFAULT_TRANSPORT_SEQ_ID, &mut self.buf)
                        .expect("valid header");
                } else if let Some(p) = payload {
                    self.buf.extend_from_slice(p);
                }
                (5004 + 2 * k, 5004 + 2 * k)
            }
            Kind::Transport => {
                self.buf.push(if from_sender { 1 } else { 2 });
                self.buf.extend_from_slice(&t.seq.to_be_bytes());
                (6000 + k, 6000 + k)
            }
            Kind::Plain => {
                self.buf.extend_from_slice(&t.seq.to_be_bytes());
                (7000 + k, 7000 + k)
            }
        };
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        let rtcp = matches!(kind(flow), Kind::Rtp { .. }) && !from_sender;
        let (src_port, dst_port) = if rtcp { (base_dst + 1, base_src + 1) } else { (base_src, base_dst) };
        let (src, dst) = if from_sender { (SENDER, RECEIVER) } else { (RECEIVER, SENDER) };
        self.pcap.udp_between(now.as_nanos() / 1_000, src, dst, src_port, dst_port, &self.buf);
        self.packets += 1;
    }

    /// The pcap file's bytes.
    pub fn finish(self) -> Vec<u8> {
        self.pcap.finish()
    }
}
