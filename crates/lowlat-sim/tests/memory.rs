//! Memory per flow, measured with a counting allocator: a flow costs what it uses.

use lowlat_sim::{Format, Scenario, Simulation};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The tests measure process-wide counters: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            let now = LIVE.fetch_add(new - l.size(), Ordering::Relaxed) + new - l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
        }
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn scenario(flows: usize, start: &str, rate: &str, access: bool) -> Scenario {
    let mut text =
        String::from("duration = \"10 s\"\n[bottleneck]\nrate = \"100 Mbit/s\"\ndelay = \"10 ms\"\n");
    for i in 0..flows {
        text += &format!(
            "[[flows]]\nid = \"f{i}\"\nkind = \"cbr\"\nrate = \"{rate}\"\npacket_size = \"125 B\"\nstart = \"{start}\"\n"
        );
        if access {
            text += "access = { rate = \"10 Mbit/s\", delay = \"1 ms\" }\n";
        }
    }
    Scenario::parse(&text, Format::Toml, "<memory>", Path::new(".")).unwrap()
}

/// Bytes held per flow by a simulation of `n` flows advanced to 5 s (before they start).
fn idle_bytes_per_flow(n: usize, access: bool) -> f64 {
    let s1 = scenario(1, "9 s", "1 kbit/s", access);
    let sn = scenario(n, "9 s", "1 kbit/s", access);
    let before = LIVE.load(Ordering::Relaxed);
    let mut a = Simulation::new(s1);
    a.advance(lowlat_core::Time::from_secs_f64(5.0));
    let one = LIVE.load(Ordering::Relaxed) - before;
    let mut b = Simulation::new(sn);
    b.advance(lowlat_core::Time::from_secs_f64(5.0));
    let many = LIVE.load(Ordering::Relaxed) - before - one;
    drop((a, b));
    (many - one) as f64 / (n - 1) as f64
}

#[test]
fn a_flow_without_traffic_costs_under_10_kb() {
    let _g = SERIAL.lock().unwrap();
    let plain = idle_bytes_per_flow(1001, false);
    let with_access = idle_bytes_per_flow(1001, true);
    eprintln!("idle flow: {plain:.0} B; with an access link both ways: {with_access:.0} B");
    assert!(plain < 10_000.0, "{plain} B per idle flow");
    assert!(with_access < 10_000.0, "{with_access} B per idle flow with access links");
}

#[test]
fn ten_thousand_cbr_flows_of_1_kbit_s_for_10_s_stay_well_under_1_gb() {
    let _g = SERIAL.lock().unwrap();
    let s = scenario(10_000, "0 s", "1 kbit/s", false);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let result = Simulation::new(s).run();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    // Every flow sent and received its packets (1 per second of 125 B).
    let received: u64 = result.summary.flows.iter().map(|f| f.packets_received).sum();
    assert!(received >= 10_000 * 9, "{received}");
    eprintln!("10 000 CBR flows, 10 s: peak {:.1} MB in the simulator", peak as f64 / 1e6);
    // The simulator's share; the Python tables add about as much again (measured: 300 MB peak RSS
    // for the whole `lowlat.run`).
    assert!(peak < 400_000_000, "{peak} B");
}
