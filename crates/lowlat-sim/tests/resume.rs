//! Downloads over connections that remember the path: the seed talk's ordering on the GEO
//! medium case, Careful Resume's safety when the saved set is wrong, and the scenario errors.

mod common;
use common::{run, scenario_error};
use lowlat_sim::downloads::ConnectionSummary;

/// A GEO path (650 ms RTT, buffer = BDP) at `down`/`up` Mbit/s, one downloads flow of `conns`
/// (TOML inline tables).
fn geo(down: f64, up: f64, cc: &str, conns: &[String], seconds: u32) -> Vec<ConnectionSummary> {
    let bdp_ms = 650;
    let text = format!(
        r#"
duration = "{seconds} s"
bin = "50 ms"
[bottleneck]
rate = "{down} Mbit/s"
delay = "325 ms"
queue = {{ kind = "droptail", limit = "{bdp_ms} ms" }}
[reverse]
rate = "{up} Mbit/s"
delay = "325 ms"
queue = {{ kind = "droptail", limit = "{bdp_ms} ms" }}
[[flows]]
id = "dl"
kind = "downloads"
cc = "{cc}"
connections = [{}]
"#,
        conns.join(", ")
    );
    let r = run(&text);
    r.summary.flows[0].connections.clone().expect("a downloads flow has connections")
}

fn conn(id: &str, size: &str, extra: &str) -> String {
    format!("{{ id = \"{id}\", size = \"{size}\"{extra} }}")
}

/// Time of the second connection of: a first download, a 10 s pause, the second.
fn second(down: f64, up: f64, size: &str, zero_rtt: bool, start_up: &str) -> ConnectionSummary {
    let c = geo(
        down,
        up,
        "cubic",
        &[
            conn("first", size, ""),
            conn(
                "second",
                size,
                &format!(", pause = \"10 s\", zero_rtt = {zero_rtt}, start_up = \"{start_up}\""),
            ),
        ],
        60,
    );
    c[1].clone()
}

#[test]
fn the_seed_ordering_on_2_mb_at_50_10_mbit_s() {
    let none = second(50.0, 10.0, "2 MB", false, "none");
    let zero = second(50.0, 10.0, "2 MB", true, "none");
    let bdp = second(50.0, 10.0, "2 MB", true, "0rtt-bdp");
    let (n, z, b) = (none.completion_s.unwrap(), zero.completion_s.unwrap(), bdp.completion_s.unwrap());
    eprintln!("2 MB 50/10: none {n:.2} s, 0-RTT {z:.2} s, 0-RTT-BDP {b:.2} s (seed: 4.3 / 3.4 / 2.9)");
    eprintln!("saved {:?}, jump {:?}", bdp.saved_used, bdp.jump_cwnd_bytes);
    assert!(b < z && z < n, "{b} < {z} < {n}");
    // 0-RTT saves the handshake's round trip.
    assert!((n - z - 0.65).abs() < 0.1, "{n} - {z}");
}

/// The saved set is from a 50 Mbit/s path (BDP 4.06 MB); the path is now 10 Mbit/s.
fn wrong(start_up: &str) -> (ConnectionSummary, f64) {
    let saved = "saved = { cwnd = \"4062500 B\", rtt = \"650 ms\" }";
    let extra = format!(", zero_rtt = true, start_up = \"{start_up}\", {saved}");
    let c = geo(10.0, 2.0, "cubic", &[conn("c", "10 MB", &extra)], 30);
    (c[0].clone(), c[0].packets_lost as f64)
}

#[test]
fn careful_resume_retreats_within_an_rtt_of_the_first_loss_and_0rtt_bdp_overshoots() {
    let (cr, cr_lost) = wrong("careful-resume");
    let (bdp, bdp_lost) = wrong("0rtt-bdp");
    eprintln!("careful resume: {cr_lost} lost, phases {:?}", cr.phases);
    eprintln!("0-rtt-bdp: {bdp_lost} lost, jump {:?}", bdp.jump_cwnd_bytes);
    // The jump is half the saved window, paced over the current RTT.
    assert_eq!(cr.jump_cwnd_bytes, Some(4_062_500 / 2));
    assert_eq!(bdp.jump_cwnd_bytes.map(|j| j >= 4_062_500), Some(true));
    let at = |p: &str| cr.phases.iter().find(|x| x.1 == p).map(|x| x.0).unwrap();
    let (jump, retreat) = (at("unvalidated"), at("safe-retreat"));
    // The first drop at the bottleneck: the jump (25 Mbit/s paced on 10 Mbit/s) fills the BDP
    // buffer (812.5 kB at 15 Mbit/s of excess) no earlier than 0.43 s after it. Safe Retreat
    // starts no later than one RTT (650 ms + a full buffer's 650 ms) after that drop, at the
    // first loss the sender can detect.
    let first_drop_earliest = jump + 812_500.0 * 8.0 / 15e6;
    assert!(retreat - first_drop_earliest <= 1.3 + 0.05, "jump {jump}, retreat {retreat}");
    // After the retreat the window is at most half of what the path confirmed (PipeSize / 2).
    let i = cr.series.t_s.iter().position(|&t| t > retreat + 0.06).unwrap();
    let pipe_bound = cr.series.delivered_bytes[i] + cr.series.in_flight_bytes[i];
    assert!(cr.series.cwnd_bytes[i] <= pipe_bound, "cwnd {} vs {pipe_bound}", cr.series.cwnd_bytes[i]);
    // 0-RTT-BDP puts the whole stale BDP on the path: several times Careful Resume's losses.
    assert!(bdp_lost > 2.0 * cr_lost, "{bdp_lost} vs {cr_lost}");
}

#[test]
fn path_memory_carries_over_and_expires() {
    // The second connection resumes from the first's set; the third names a set whose lifetime
    // (5 s) expired during the 10 s pause, so it starts from the initial window.
    let c = geo(
        50.0,
        10.0,
        "newreno",
        &[
            conn("a", "2 MB", ", lifetime = \"5 s\""),
            conn(
                "b",
                "2 MB",
                ", pause = \"1 s\", zero_rtt = true, start_up = \"careful-resume\", lifetime = \"60 min\"",
            ),
            conn(
                "c",
                "2 MB",
                ", pause = \"10 s\", zero_rtt = true, start_up = \"careful-resume\", resume_from = \"a\"",
            ),
        ],
        60,
    );
    let saved_a = c[0].saved_after.expect("the first connection saved a set");
    assert_eq!(c[1].saved_used, Some(saved_a));
    assert!(c[1].phases.iter().any(|p| p.1 == "unvalidated"), "{:?}", c[1].phases);
    assert_eq!(c[2].saved_used, None, "a's set expired");
    assert!(c[1].completion_s.unwrap() < c[2].completion_s.unwrap());
    // The saved window: bytes acknowledged in one RTT, at most half the final window in slow start.
    assert!(saved_a.cwnd_bytes > 4 * 12_000 && saved_a.cwnd_bytes < 2_000_000);
    assert!((saved_a.rtt_ms - 650.0).abs() < 5.0);
}

#[test]
fn bad_resume_keys_give_one_line_errors_naming_the_key() {
    let base = |conns: &str| {
        format!(
            "duration = \"10 s\"\n[bottleneck]\nrate = \"10 Mbit/s\"\n[[flows]]\nid = \"d\"\nkind = \"downloads\"\nconnections = [{conns}]\n"
        )
    };
    for (conns, key, what) in [
        (
            "{ id = \"a\", size = \"1 MB\", start_up = \"careful-resume\", saved = { cwnd = \"0 B\", rtt = \"600 ms\" } }",
            "flows[0].connections[0].saved.cwnd",
            "positive saved window",
        ),
        ("{ id = \"a\", size = \"1 MB\", lifetime = \"-5 s\" }", "flows[0].connections[0].lifetime", "duration"),
        (
            "{ id = \"a\", size = \"1 MB\" }, { id = \"b\", size = \"1 MB\", start_up = \"picoquic\", resume_from = \"z\" }",
            "flows[0].connections[1].resume_from",
            "earlier connection (a)",
        ),
        (
            "{ id = \"a\", size = \"1 MB\", start_up = \"careful-resume\", resume_from = \"a\" }",
            "flows[0].connections[0].resume_from",
            "there is none",
        ),
        ("{ id = \"a\", size = \"1 MB\", start_up = \"fast\" }", "flows[0].connections[0].start_up", "careful-resume"),
        ("{ id = \"a\", size = \"0 B\" }", "flows[0].connections[0].size", "positive"),
    ] {
        let e = scenario_error(&base(conns));
        let msg = e.to_string();
        assert_eq!(e.key, key, "{msg}");
        assert!(msg.contains(what) && !msg.contains('\n'), "{msg}");
    }
}

#[test]
fn lossy_resumed_downloads_are_deterministic() {
    let text = |seed: u64| {
        format!(
            r#"
duration = "120 s"
seed = {seed}
[bottleneck]
rate = "50 Mbit/s"
delay = "325 ms"
queue = {{ kind = "droptail", limit = "650 ms" }}
loss = {{ kind = "gilbert-elliott", p_good_to_bad = 0.001, p_bad_to_good = 0.645 }}
[reverse]
rate = "10 Mbit/s"
delay = "325 ms"
[[flows]]
id = "dl"
kind = "downloads"
cc = "cubic"
connections = [{{ id = "a", size = "2 MB" }}, {{ id = "b", size = "2 MB", pause = "1 s", zero_rtt = true, start_up = "careful-resume" }}]
"#
        )
    };
    let conns = |seed| run(&text(seed)).summary.flows[0].connections.clone().unwrap();
    let (x, y, z) = (conns(1), conns(1), conns(2));
    assert_eq!(x, y);
    assert!(x[1].completion_s.is_some());
    assert_ne!(x, z, "another seed, other losses");
}
