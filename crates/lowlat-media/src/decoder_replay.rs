//! The Zhuge artifact's in-order frame accounting (`VideoDecoder::DecodeDataPacket` with
//! `app_delay.awk`), replayed on a receiver's frame times after a run: which frames leave the
//! decoder, when, and whether decoded or given up. The reproduction reads its frame delays from
//! it (`lowlat.reproduce.zhuge.in_order_frame_delays` documents the rules).
//!
//! The replay steps through the decoder's events one by one, so it is here rather than in
//! Python: a 300 s run has thousands of frames, and the Python loop cost about a twentieth of a
//! reproduction run.

use lowlat_core::Time;

/// What the replay reads of one frame (frames are given in id order, ids 0, 1, ...).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameTimes {
    /// When its last missing packet first arrived (`None`: never).
    pub complete: Option<Time>,
    /// When its first packet arrived if it was then the newest frame seen (`None`: never).
    pub newest: Option<Time>,
}

/// How one frame left the decoder.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameExit {
    /// The instant of its last line (`None`: it has none by the end of the run).
    pub left: Option<Time>,
    /// Whether that line is a decode (false: "discard frame", given up or given up again).
    pub decoded: bool,
}

/// Replays the decoder over `frames` (in id order) with a deadline of `discard_frames` frames:
/// one exit per frame. Events are taken in time order, then frame id, a newest frame's first
/// packet before a completion (within one packet the decoder gives up first, then adds it).
pub fn in_order_exits(frames: &[FrameTimes], discard_frames: usize) -> Vec<FrameExit> {
    let n = frames.len();
    let mut events: Vec<(Time, usize, u8)> = Vec::with_capacity(2 * n);
    for (i, f) in frames.iter().enumerate() {
        events.extend(f.newest.map(|t| (t, i, 0)));
        events.extend(f.complete.map(|t| (t, i, 1)));
    }
    events.sort_unstable();
    let mut exits = vec![FrameExit::default(); n];
    let mut played = vec![false; n];
    let mut done = vec![false; n];
    // The last played id (the artifact's m_lastPlayedFrameId + 1 wraps -1 to 0) and the newest
    // id seen before the packet at hand.
    let mut last: i64 = -1;
    let mut highest = 0usize;
    // Decodes the complete, unplayed frames from `first` on (up to the newest seen) at `t`;
    // returns the last one decoded, or `first - 1`.
    let play_run = |first: usize,
                    t: Time,
                    played: &mut [bool],
                    exits: &mut [FrameExit],
                    done: &[bool],
                    highest: usize| {
        let mut j = first;
        while j <= highest && !played[j] && done[j] {
            played[j] = true;
            exits[j] = FrameExit { left: Some(t), decoded: true };
            j += 1;
        }
        j as i64 - 1
    };
    for (t, i, kind) in events {
        if played[i] {
            continue; // a packet of a frame already played (or given up) is skipped
        }
        if kind == 0 {
            // Given up (again, if the step back passed it), then the complete frames behind
            // it; the last played id is the frame given up unless frames behind it decoded.
            let upto = i as i64 - discard_frames as i64;
            for idx in (last + 1)..=upto {
                let idx = idx as usize;
                played[idx] = true;
                exits[idx] = FrameExit { left: Some(t), decoded: false };
                last = (idx as i64).max(play_run(idx + 1, t, &mut played, &mut exits, &done, highest));
            }
            highest = highest.max(i);
        } else {
            done[i] = true;
            if i == 0 {
                played[0] = true;
                exits[0] = FrameExit { left: Some(t), decoded: true };
                last = 0;
            } else if i as i64 == last + 1 {
                last = play_run(i, t, &mut played, &mut exits, &done, highest);
            }
        }
    }
    exits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Option<Time> {
        Some(Time::from_millis(x))
    }

    #[test]
    fn frames_leave_in_order_and_a_missing_one_is_given_up_after_the_deadline() {
        // Frame 1 never completes: 2 and 3 wait behind it; the first packet of frame 4 (with a
        // deadline of 3 frames) gives frame 1 up and decodes 2 and 3 at once.
        let frames = [
            FrameTimes { complete: ms(10), newest: ms(5) },
            FrameTimes { complete: None, newest: ms(45) },
            FrameTimes { complete: ms(90), newest: ms(85) },
            FrameTimes { complete: ms(130), newest: ms(125) },
            FrameTimes { complete: ms(170), newest: ms(165) },
        ];
        let exits = in_order_exits(&frames, 3);
        let left: Vec<Option<Time>> = exits.iter().map(|e| e.left).collect();
        assert_eq!(left, vec![ms(10), ms(165), ms(165), ms(165), ms(170)]);
        let decoded: Vec<bool> = exits.iter().map(|e| e.decoded).collect();
        assert_eq!(decoded, vec![true, false, true, true, true]);
    }

    #[test]
    fn a_frame_with_no_event_has_no_exit() {
        let frames =
            [FrameTimes { complete: ms(10), newest: ms(5) }, FrameTimes { complete: None, newest: None }];
        assert_eq!(in_order_exits(&frames, 25)[1], FrameExit { left: None, decoded: false });
        assert!(in_order_exits(&[], 25).is_empty());
    }
}
