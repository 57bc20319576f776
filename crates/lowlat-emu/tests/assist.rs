//! Every lowlat-assist middlebox in the relay, on real packets between real endpoints on
//! loopback: FastAck and out-of-band Zhuge on lowlat's transport (`lowlat send`/`receive` for a
//! bulk flow), the SCONE signaller (`scone-rtc`, `scone`) for real RTP; NACK/RTX through Zhuge.
//! Short runs.

use lowlat_core::Duration;
use lowlat_emu::relay::{Relay, RelayConfig, RelayReport};
use lowlat_emu::{rtp, transport};
use lowlat_sim::{Format, Scenario};
use std::net::UdpSocket;
use std::sync::Mutex;

/// One real-time run at a time: runs in parallel would share the two cores with each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const SECONDS: f64 = 3.0;

fn scenario(assist: &str, flow: &str, seconds: f64) -> Scenario {
    scenario_at(assist, flow, seconds, "rate = \"2 Mbit/s\"")
}

fn scenario_at(assist: &str, flow: &str, seconds: f64, rate: &str) -> Scenario {
    let text = format!(
        "name = \"assist\"\nduration = \"{seconds} s\"\nseed = 1\n[bottleneck]\n{rate}\n\
         delay = \"20 ms\"\nqueue = {{ kind = \"droptail\", limit = \"100 ms\" }}\nassist = \"{assist}\"\n\
         [reverse]\nrate = \"2 Mbit/s\"\ndelay = \"20 ms\"\n[[flows]]\nid = \"f\"\n{flow}\n"
    );
    Scenario::parse(&text, Format::Toml, "assist.toml", std::path::Path::new(".")).unwrap()
}

const RATE: &str = "rate = \"2 Mbit/s\"";
const BULK: &str = "kind = \"bulk\"\ncc = \"cubic\"\npacket_size = \"1200 B\"";
const VIDEO: &str =
    "kind = \"rtp-video\"\ncc = \"gcc\"\nrmin = \"150 kbit/s\"\nrmax = \"1.5 Mbit/s\"\nfps = 30";

fn relay(
    sc: &Scenario,
    receiver: &UdpSocket,
) -> (std::net::SocketAddr, std::thread::JoinHandle<RelayReport>) {
    let mut cfg = RelayConfig::new("127.0.0.1:0".parse().unwrap(), receiver.local_addr().unwrap());
    cfg.duration = Some(sc.duration + Duration::from_millis(300));
    let relay = Relay::bind(sc.clone(), cfg).unwrap();
    let listen = relay.listen_addr();
    (listen, std::thread::spawn(move || relay.run(|| false).unwrap()))
}

/// A bulk transfer through the relay: the sender's and receiver's reports and the relay's.
fn bulk(
    assist: &str,
    seconds: f64,
    rate: &str,
) -> (transport::TransportSenderReport, transport::TransportReceiverReport, RelayReport) {
    let sc = scenario_at(assist, BULK, seconds, rate);
    let receiver_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (listen, relay) = relay(&sc, &receiver_sock);
    let rsc = sc.clone();
    let d = Some(sc.duration);
    let receiver =
        std::thread::spawn(move || transport::run_receiver(&rsc, None, &receiver_sock, d, || false).unwrap());
    let sender_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = transport::run_sender(&sc, None, &sender_sock, listen, d, || false).unwrap();
    (sent, receiver.join().unwrap(), relay.join().unwrap())
}

#[test]
fn lowlats_transport_fills_the_link_through_the_relay() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (sent, got, relay) = bulk("none", SECONDS, RATE);
    let c = relay.counters;
    let thr = relay.result.summary.flows[0].throughput_kbps;
    eprintln!(
        "bulk: {c:?}; {thr:.0} kbit/s; srtt {:?} min {:?}; acks {}",
        sent.srtt, sent.min_rtt, sent.acks
    );
    assert_eq!((got.malformed, sent.malformed, c.malformed), (0, 0, [0, 0]), "every packet decodes");
    assert!(sent.acks > 100 && sent.acks <= got.acks_sent, "the receiver's ACKs reach the sender");
    assert!(sent.stats.bytes_acked > 100_000, "ACKs acknowledge data");
    assert!(thr > 1_400.0 && thr < 2_100.0, "cubic fills most of 2 Mbit/s: {thr}");
    // 40 ms of propagation both ways: the smallest RTT is at least that.
    assert!(sent.min_rtt.as_millis_f64() >= 40.0, "{:?}", sent.min_rtt);
}

#[test]
fn fastack_acknowledges_for_the_client() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (sent, got, relay) = bulk("fastack", SECONDS, RATE);
    let c = relay.counters;
    eprintln!(
        "fastack: {c:?}; min rtt {:?}; acks {} (client sent {})",
        sent.min_rtt, sent.acks, got.acks_sent
    );
    assert_eq!(c.forwarded[1], 0, "the client's ACKs are dropped at the AP");
    assert!(got.acks_sent > 100, "the client acknowledged");
    // The AP goes on acknowledging what is in flight for a moment after the sender stopped.
    assert!(
        c.assist_feedback > 100 && sent.acks as f64 >= 0.9 * c.assist_feedback as f64,
        "the AP's ACKs reach the sender"
    );
    assert_eq!((sent.malformed, c.malformed[0]), (0, 0), "the AP reads data packets, the sender its ACKs");
    assert!(sent.stats.bytes_acked > 100_000);
    // The AP acknowledges as its link delivers: the sender's RTT skips both 20 ms propagations.
    assert!(sent.min_rtt.as_millis_f64() < 20.0, "{:?}", sent.min_rtt);
}

#[test]
fn zhuge_out_of_band_holds_real_acks() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Zhuge's history of delay increases starts after a 3 s warm-up; the capacity then halves
    // twice, so the queue's delay grows and the AP has increases to signal.
    let steps =
        "schedule = [{ at = \"0 s\", rate = \"2 Mbit/s\" }, { at = \"3.5 s\", rate = \"1 Mbit/s\" }, \
                 { at = \"4.2 s\", rate = \"0.5 Mbit/s\" }]";
    let (sent, got, relay) = bulk("zhuge", 5.0, steps);
    let c = relay.counters;
    eprintln!("zhuge oob: {c:?}; acks {} of {}", sent.acks, got.acks_sent);
    assert!(c.forwarded[1] > 50, "ACKs pass the AP (delayed, not replaced)");
    assert!(c.assist_held > 0, "some ACKs were held");
    assert_eq!(c.assist_feedback, 0, "out-of-band Zhuge writes nothing of its own");
    assert_eq!((sent.malformed, c.malformed[0]), (0, 0));
    assert!(sent.acks as f64 >= 0.95 * c.forwarded[1] as f64 && sent.stats.bytes_acked > 50_000);
}

fn video(assist: &str) -> (rtp::SenderReport, RelayReport) {
    let sc = scenario(assist, VIDEO, SECONDS);
    let receiver_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (listen, relay) = relay(&sc, &receiver_sock);
    let rsc = sc.clone();
    let d = Some(Duration::from_secs_f64(SECONDS));
    let receiver =
        std::thread::spawn(move || rtp::run_receiver(&rsc, None, &receiver_sock, d, || false).unwrap());
    let sender_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = rtp::run_sender(&sc, None, &sender_sock, listen, d, || false).unwrap();
    receiver.join().unwrap();
    (sent, relay.join().unwrap())
}

#[test]
fn scone_rtc_signals_reach_the_rtp_sender() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (sent, relay) = video("scone-rtc");
    let c = relay.counters;
    eprintln!("scone-rtc: {c:?}; signals {}", sent.signals);
    // One NETWORK_SIGNAL every 20 ms while the flow is active.
    assert!(sent.signals as f64 > SECONDS / 0.02 * 0.5, "{} signals", sent.signals);
    // The AP signals a flow active in the last second: for a moment after the sender stopped too.
    assert!(sent.signals as f64 >= 0.85 * c.assist_feedback as f64, "the AP's signals were read as such");
    assert_eq!(sent.malformed_feedback, 0, "signals and RTCP told apart");
    assert!(c.forwarded[1] > 10, "the receiver's own feedback still passes");
}

#[test]
fn scone_advice_reaches_the_rtp_sender() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (sent, relay) = video("scone");
    let c = relay.counters;
    eprintln!("scone: {c:?}; signals {}", sent.signals);
    assert!(sent.signals >= 1 && sent.signals == c.assist_feedback, "the first datagram's SCONE advice");
    assert_eq!(sent.malformed_feedback, 0);
}

#[test]
fn nack_repairs_losses_on_real_sockets_through_zhuge() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // 2 % random loss at the bottleneck; Zhuge replaces the receiver's transport-cc, not its NACKs.
    let video = format!("{VIDEO}\nnack = true");
    let sc = scenario_at(
        "zhuge",
        &video,
        SECONDS,
        "rate = \"2 Mbit/s\"\nloss = { kind = \"bernoulli\", p = 0.02 }",
    );
    let receiver_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (listen, relay) = relay(&sc, &receiver_sock);
    let rsc = sc.clone();
    let d = Some(Duration::from_secs_f64(SECONDS));
    let receiver =
        std::thread::spawn(move || rtp::run_receiver(&rsc, None, &receiver_sock, d, || false).unwrap());
    let sender_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let sent = rtp::run_sender(&sc, None, &sender_sock, listen, d, || false).unwrap();
    let got = receiver.join().unwrap();
    let c = relay.join().unwrap().counters;
    eprintln!(
        "nack: {c:?}; nacks sent {} read {}; retransmissions {}; recovered {}",
        got.nacks_sent, sent.nacks, sent.media.retransmissions, got.media.recovered
    );
    assert!(got.nacks_sent > 0, "losses were asked for");
    assert!(sent.nacks + 2 >= got.nacks_sent && sent.nacks > 0, "the NACKs passed the AP");
    assert_eq!(c.forwarded[1], sent.nacks, "only the NACKs pass Zhuge, and reach the sender");
    assert!(
        sent.media.retransmissions > 0 && got.media.recovered > 0,
        "lost packets were resent and arrived"
    );
    assert_eq!((got.malformed, sent.malformed_feedback), (0, 0));
}
