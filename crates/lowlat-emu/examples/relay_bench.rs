//! `cargo run --release -p lowlat-emu --example relay_bench [SECONDS]`: the relay's figures.
fn main() {
    let seconds = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2.0);
    match lowlat_emu::bench::run(seconds, lowlat_core::Bitrate::bps(100_000_000)) {
        Ok(b) => println!("{b:#?}"),
        Err(e) => eprintln!("error: {e}"),
    }
}
