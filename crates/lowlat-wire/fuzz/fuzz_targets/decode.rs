//! Every decoder on arbitrary bytes: errors are fine, panics are bugs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lowlat_wire::{decode_compound, CcfbReport, NumReportsConvention, RtpHeader, TransportCcFeedback};

fuzz_target!(|data: &[u8]| {
    let _ = decode_compound(data, NumReportsConvention::Count);
    let _ = decode_compound(data, NumReportsConvention::CountMinusOne);
    let _ = TransportCcFeedback::decode(data);
    let _ = CcfbReport::decode(data, NumReportsConvention::Count);
    if let Ok((_, off, len)) = RtpHeader::decode(data, 5) {
        assert!(off + len <= data.len());
    }
});
