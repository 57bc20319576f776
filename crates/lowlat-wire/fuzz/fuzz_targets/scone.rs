//! The SCONE packet and the capacity/queue signal on arbitrary bytes: errors are fine, panics
//! are bugs, and an element's rewrite only ever lowers the rate signal.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lowlat_wire::scone::{apply_advice, SconeRepr};
use lowlat_wire::NetworkSignalRepr;

fuzz_target!(|data: &[u8]| {
    let _ = NetworkSignalRepr::decode(data);
    let Some((&target, rest)) = data.split_first() else { return };
    let before = SconeRepr::decode(rest).map(|r| r.rate_signal).ok();
    let mut buf = rest.to_vec();
    if let Ok(is_scone) = apply_advice(&mut buf, target) {
        assert_eq!(is_scone, before.is_some());
        if let Some(b) = before {
            assert_eq!(SconeRepr::decode(&buf).map(|r| r.rate_signal).ok(), Some(b.min(target)));
        }
    }
});
