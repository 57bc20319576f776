//! Same scenario and seed: byte-identical results; another seed: other random draws.

mod common;
use common::{run, scenario};
use lowlat_sim::Simulation;

const RANDOM: &str = r#"
duration = "20 s"
seed = 3
[bottleneck]
rate = "5 Mbit/s"
delay = "20 ms"
jitter = "5 ms"
loss = { kind = "bernoulli", p = 0.01 }
queue = { kind = "codel" }
[[flows]]
id = "a"
kind = "poisson"
rate = "3 Mbit/s"
[[flows]]
id = "b"
kind = "cbr"
rate = "2.5 Mbit/s"
start = "2 s"
stop = "15 s"
"#;

fn without_wall(json: &str) -> String {
    json.lines().filter(|l| !l.trim_start().starts_with("\"wall_s\"")).collect::<Vec<_>>().join("\n")
}

/// The summary without its wall time and event count (which the driver's shortcuts change).
fn without_events(json: &str) -> String {
    without_wall(json).lines().filter(|l| !l.starts_with("  \"events\"")).collect::<Vec<_>>().join("\n")
}

/// `text` run by advancing `step_ms` of simulated time at a time.
fn run_sliced(text: &str, step_ms: u64) -> lowlat_sim::RunResult {
    let mut sliced = Simulation::new(scenario(text));
    let mut t = lowlat_core::Time::ZERO;
    while !sliced.is_done() {
        t += lowlat_core::Duration::from_millis(step_ms);
        sliced.advance(t);
    }
    sliced.finish()
}

/// A Copa video flow (its receiver acknowledging every `ack_every` packets, TCP recovery;
/// `video`: more of its lines) through a 5 ms access link and a lossy, jittered bottleneck
/// (`bottleneck`: its rate, queue and assist lines), with a reverse link of its own, beside a
/// CBR flow (`cbr`: more of its lines).
fn copa_video_beside_cbr(
    duration: &str,
    seed: u64,
    bottleneck: &str,
    (ack_every, video): (u32, &str),
    cbr: &str,
) -> String {
    format!(
        r#"
duration = "{duration}"
seed = {seed}
[bottleneck]
delay = "20 ms"
jitter = "2 ms"
loss = {{ kind = "bernoulli", p = 0.005 }}
{bottleneck}
[reverse]
rate = "50 Mbit/s"
delay = "20 ms"
[[flows]]
id = "video"
kind = "rtp-video"
cc = "copa"
fps = 25
rmin = "500 kbit/s"
rmax = "30 Mbit/s"
packet_size = "1200 B"
access = {{ delay = "5 ms" }}
ack_every = {ack_every}
recovery = "tcp"
{video}
[[flows]]
id = "cbr"
kind = "cbr"
rate = "2 Mbit/s"
{cbr}
"#
    )
}

/// `got` and `want` give the same summary (but for the event count), series, frames and sender
/// RTT samples.
fn assert_same_results(got: &lowlat_sim::RunResult, want: &lowlat_sim::RunResult, what: &str) {
    assert_eq!(without_events(&got.summary_json()), without_events(&want.summary_json()), "{what}");
    for (g, w) in [
        (&got.flow_series, &want.flow_series),
        (&got.link_series, &want.link_series),
        (&got.frames, &want.frames),
        (&got.sender_rtt, &want.sender_rtt),
    ] {
        assert_eq!(format!("{g:?}"), format!("{w:?}"), "{what}");
    }
}

#[test]
fn same_scenario_and_seed_give_identical_summaries_and_series() {
    let a = run(RANDOM);
    let b = run(RANDOM);
    assert_eq!(without_wall(&a.summary_json()), without_wall(&b.summary_json()));
    assert_eq!(format!("{:?}", a.flow_series), format!("{:?}", b.flow_series));
    assert_eq!(format!("{:?}", a.link_series), format!("{:?}", b.link_series));
}

#[test]
fn advancing_in_slices_gives_the_same_result_as_one_run() {
    let whole = Simulation::new(scenario(RANDOM)).run();
    let sliced = run_sliced(RANDOM, 37);
    assert_eq!(without_wall(&whole.summary_json()), without_wall(&sliced.summary_json()));
}

#[test]
fn another_seed_changes_the_random_parts() {
    let a = run(RANDOM);
    let b = run(&RANDOM.replace("seed = 3", "seed = 4"));
    assert_ne!(a.summary.flows[0].packets_sent, b.summary.flows[0].packets_sent);
    assert_ne!(a.summary.links[0].random_losses, b.summary.links[0].random_losses);
    // The CBR flow's sending is not random: the same packets are sent.
    assert_eq!(a.summary.flows[1].packets_sent, b.summary.flows[1].packets_sent);
}

/// A receiver that, like the sink, ignores what it gets, but does not say it is passive: the
/// driver cannot treat the hops that end at it as quiet.
#[derive(Debug)]
struct NotPassive;
impl lowlat_sim::app::Endpoint for NotPassive {}

/// Two CBR flows through access and egress links, over a bottleneck that queues, drops, loses and
/// jitters: handing packets on through quiet links (one event per packet, the sources'), and
/// handing them on ahead to hops that only one link feeds, give exactly the results of waking
/// every hop for every packet, in one run or in slices.
#[test]
fn quiet_links_and_handing_on_ahead_give_the_results_of_waking_every_hop() {
    let text = r#"
duration = "10 s"
seed = 5
[bottleneck]
rate = "4 Mbit/s"
delay = "20 ms"
jitter = "3 ms"
loss = { kind = "bernoulli", p = 0.01 }
queue = { kind = "droptail", limit = "50 ms" }
[[flows]]
id = "a"
kind = "cbr"
rate = "2.5 Mbit/s"
access = { rate = "100 Mbit/s", delay = "1 ms" }
egress = { rate = "3 Mbit/s", delay = "2 ms" }
[[flows]]
id = "b"
kind = "poisson"
rate = "2 Mbit/s"
start = "1 s"
egress = { rate = "50 Mbit/s", delay = "5 ms" }
"#;
    let not_passive = || {
        let mut sim = Simulation::new(scenario(text));
        for (i, id) in ["a", "b"].into_iter().enumerate() {
            let flow = &scenario(text).flows[i];
            let rng = lowlat_core::rng::stream(5, &format!("flow.{id}"));
            let source = lowlat_sim::traffic::Source::new(flow, rng);
            sim.set_endpoints(id, Box::new(source), Box::new(NotPassive)).unwrap();
        }
        sim
    };
    let quiet = Simulation::new(scenario(text)).run();
    let ahead = not_passive().run();
    let mut woken = not_passive();
    woken.wake_every_hop();
    let woken = woken.run();
    let sliced = run_sliced(text, 23);
    let want = without_events(&woken.summary_json());
    for r in [&quiet, &ahead, &sliced] {
        assert_eq!(without_events(&r.summary_json()), want);
        assert_eq!(format!("{:?}", r.flow_series), format!("{:?}", woken.flow_series));
        assert_eq!(format!("{:?}", r.link_series), format!("{:?}", woken.link_series));
    }
    // The egresses are fed by the bottleneck alone and end at sinks: quiet; the bottleneck hands
    // on to them only: quiet too. Flow a's access link feeds the bottleneck with flow b's
    // source: it is woken for each of its packets. So: the sources' events plus flow a's hop.
    let sent: u64 = quiet.summary.flows.iter().map(|f| f.packets_sent).sum();
    let received: u64 = quiet.summary.flows.iter().map(|f| f.packets_received).sum();
    let via_access = quiet.summary.flows[0].packets_sent;
    // (Less the packets still on a link when the run ends.)
    let near = |e: u64, want: u64| e <= want && e + 4 >= want;
    let e = quiet.summary.events;
    assert!(near(e, sent + via_access), "{e} events, {sent} + {via_access} packets");
    // Not passive: the egresses are woken for each packet they deliver; the bottleneck still
    // hands on ahead to them (it alone feeds them) and is never woken.
    let e = ahead.summary.events;
    assert!(near(e, sent + via_access + received), "{e} events, {sent} + {via_access} + {received} packets");
    assert!(woken.summary.events > 3 * sent, "{} events for {sent} packets", woken.summary.events);
    assert!(quiet.summary.flows.iter().all(|f| f.packets_received > 1000));
    assert!(quiet.summary.links[0].drops > 0, "the bottleneck queue overflows");
}

/// Copa (ack-clocked) through an access link, a lossy jittered bottleneck whose access point runs
/// FastAck or Zhuge holding only copies of ACKs, and the reverse link, next to a CBR flow the AP
/// leaves alone: the site's queue taking its arrivals ahead, FastAck hearing of transmissions at
/// admission and its ACKs handed on ahead, the reverse link handing on past the site, give
/// exactly the results of waking every hop for every packet, in one run or in slices.
#[test]
fn middleboxes_heard_ahead_give_the_results_of_waking_every_hop() {
    for assist in
        [r#"assist = "fastack""#, "assist = \"zhuge\"\nzhuge = { in_band = \"sampled\", ack_copy = true }"]
    {
        let bottleneck = format!(
            r#"rate = "12 Mbit/s"
queue = {{ kind = "droptail", limit = "120 packets" }}
{assist}"#
        );
        let cbr = r#"access = { rate = "100 Mbit/s", delay = "2 ms" }"#;
        let text = copa_video_beside_cbr("4 s", 3, &bottleneck, (1, ""), cbr);
        let plain = Simulation::new(scenario(&text)).run();
        let mut woken = Simulation::new(scenario(&text));
        woken.wake_every_hop();
        let woken = woken.run();
        let sliced = run_sliced(&text, 17);
        assert!(woken.summary.flows[0].packets_received > 2_000, "{assist}: the video flowed");
        for r in [&plain, &sliced] {
            assert_same_results(r, &woken, assist);
        }
        // Fewer events: no wake-up per access-link arrival, reverse-link delivery or (FastAck)
        // transmission's end.
        let (fewer, all) = (plain.summary.events, woken.summary.events);
        assert!(20 * fewer < 17 * all, "{assist}: {fewer} events against {all}");
    }
}

/// Copa video acknowledged packet by packet (its receiver acts only on arrivals) through a
/// bottleneck that queues (CoDel; with Zhuge, its device queue too), loses and jitters, next to a
/// CBR flow to a sink: handing each packet to the receiver as soon as its delivery is known, and
/// its ACK to the reverse link then, gives exactly the results of waking every hop for every
/// packet, in one run or in slices, with about one event per packet fewer; also once the CBR
/// flow stops, and once the video does, its last packets queued with nothing arriving behind. A receiver that
/// acknowledges every second packet (its ACK timer) is woken as before.
#[test]
fn receivers_acting_only_on_arrivals_handed_packets_ahead_give_the_results_of_waking_every_hop() {
    for (queue, assist) in [
        (r#"{ kind = "codel" }"#, ""),
        (r#"{ kind = "codel", limit = "10240 packets", device_limit = "1 packet" }"#, r#"assist = "zhuge""#),
        (r#"{ kind = "droptail", limit = "120 packets" }"#, r#"assist = "fastack""#),
    ] {
        let bottleneck = format!("rate = \"10 Mbit/s\"\nqueue = {queue}\n{assist}");
        let text = |ack_every| {
            copa_video_beside_cbr("6 s", 7, &bottleneck, (ack_every, "stop = \"5 s\""), "stop = \"4 s\"")
        };
        let each = text(1);
        let plain = Simulation::new(scenario(&each)).run();
        let mut woken = Simulation::new(scenario(&each));
        woken.wake_every_hop();
        let woken = woken.run();
        let sliced = run_sliced(&each, 13);
        let video = &woken.summary.flows[0];
        assert!(video.packets_received > 3_000, "{assist}: the video flowed");
        for r in [&plain, &sliced] {
            assert_same_results(r, &woken, assist);
        }
        // One event fewer per video packet delivered: none for the bottleneck's delivery to the
        // receiver. (A capture of the endpoints' packets turns the handing ahead off.)
        let captured = |text: &str| {
            let mut sim = Simulation::new(scenario(text));
            sim.capture_pcap();
            sim.run()
        };
        let with_wakeups = captured(&each);
        assert_same_results(&with_wakeups, &woken, assist);
        let saved = with_wakeups.summary.events - plain.summary.events;
        assert!(10 * saved > 9 * video.packets_received, "{assist}: {saved} events fewer");
        let every_second = text(2);
        let (timer, timer_captured) =
            (Simulation::new(scenario(&every_second)).run(), captured(&every_second));
        assert_eq!(timer.summary.events, timer_captured.summary.events, "{assist}: an ACK timer");
    }
}
