"""The Zhuge evaluation (SIGCOMM 2022), reproduced: ``lowlat reproduce zhuge``.

Three parts, all on the simulator:

1. **Trace families** (W1 restaurant Wi-Fi, W2 office Wi-Fi, C1 indoor 4G/5G, C2 city 4G, C3 city
   5G): a 25 fps video over each trace with GCC+FIFO, GCC+CoDel, GCC+Zhuge, Copa, Copa+FastAck
   and Copa+Zhuge. Results: ``summary.csv`` (one row per run) and ``table_<family>.csv`` (means
   over the family's traces) of the ratio of RTT > 200 ms, of frames later than 400 ms as the
   artifact counts them (``frame_late_ratio_artifact``, pooled over the family's frames: see
   "How frames are counted" below; the claims use this one) and by completion alone
   (``ratio_frame_delay_over_400ms``, lowlat's summary metric), of 1 s bins under 10 fps, the P99
   RTT and frame delay, and the throughput.
2. **ABW drop**: 30 Mbit/s falling to 30/k Mbit/s at a random instant in 144-176 s of a 200 s run
   (GCC; Copa: 20-52 s of 72 s, the artifact's runs of each), for k from 2 to 50, over ``--seeds``
   seeds, each scheme over FIFO and over CoDel; how long, in
   the 20 s after the drop, the network RTT stays above 200 ms, frame delay above 400 ms and the
   frame rate under 10 fps, each scheme on its own queue (``abw_drop.csv``, ``abw_drop.png``),
   and the artifact's statistic (``abw_drop_artifact.csv``: the first episode of the sender's
   smoothed RTT above 200 ms, the better of FIFO and CoDel; see "The ABW-drop statistic" below;
   the claim uses this one).
3. **Prediction accuracy**: the CDF of the Fortune Teller's prediction error, split by predicted
   delay (1-64 ms, 64 ms and more), as the paper's Fig. 19 (``accuracy.csv``, ``accuracy.png``),
   over a uniform random sample of :data:`PREDICTION_SAMPLE` predictions of each GCC+Zhuge run.

**The paper's evaluation conditions** (:data:`CONDITIONS`), read from the public artifact
(``transys-project/zhuge``, ``ns-3.34-diff``: ``scratch/fec-emulate.cc``, the ``*-exp-trace.conf``
and ``*-static-exp.conf`` run lists, ``real-exp/*summary*``, ``src/bitrate-ctrl``):

- Traces replayed one line every 200 ms from the first line, each rate x 15/13
  (``BandwidthTrace``: ``traceInterval = 200``, ``stod(bw) / 13. * 15.``); a run lasts
  min(300 s, lines x 200 ms) (``main``: ``duration = min(duration, n * traceInterval / 1000)``).
  (The artifact reads the first column of each line; its ``.pitree-trace`` files hold the time
  there, so the bandwidth column is used here, as its authors evidently intended.)
- Point-to-point last hop for every family (``--mode=1`` in the trace run lists: no Wi-Fi model;
  ``--wifi-ap`` uses the project's Wi-Fi AP model for W1/W2 instead).
- Base RTT 68 ms: sender-router 9 ms, router-client 25 ms each way (``BuildWiredTopo``:
  ``"9ms"``, ``TOPO_DEFAULT_PDELAY = 25``); the client's uplink is not rate-limited (300 Mbit/s).
- Queues (:func:`bottleneck_queue`): the router's device towards the client carries a
  traffic-control qdisc in front of its own drop-tail FIFO (``BuildWiredTopo``:
  ``TrafficControlHelper::SetRootQueueDisc``; ns-3.34's ``DropTailQueue`` default 100 packets), and
  ns-3's flow control passes packets through the qdisc while the device FIFO has room
  (``queue.device_limit``, docs/scenario-format.md, with the ns-3 sources). FIFO = ``PfifoFast``
  250 packets + the device's 100 = one 350-packet FIFO (the same thing: a FIFO in front of a FIFO).
  CoDel = ``FqCoDel`` (10 240 packets, target 5 ms, interval 100 ms; one flow, so CoDel on its
  queue) in front of the 100-packet device FIFO: CoDel measures and drops only beyond the first
  100 packets queued (at 30/10 Mbit/s x 15/13, 100 packets of 1460 B are ~340 ms). Under Zhuge the
  device FIFO is 1 packet (``network-queue-zhuge.cc`` ``InitSocket``:
  ``m_dlQueue->SetMaxSize("1p")``; its prediction sums the qdisc's and the device queue's bytes, as
  lowlat's Zhuge sees both stages), so CoDel acts on almost the whole queue and Zhuge's FIFO holds
  251 packets; under FastAck it is 1000 (``network-queue-fastack.cc``: ``SetMaxSize("1000p")``):
  Copa+FastAck's FIFO holds 1250 (through ``--wifi-ap`` the device FIFO is the AP's MAC queue,
  ``WifiMacQueue`` 100 packets, for every scheme). The receive direction (ACKs, feedback) keeps
  100 packets (Zhuge shrinks it only with ``--qsize=1``; the run lists leave the default 2).
  ns-3's qdisc quota (64 dequeues per run) never binds (each run refills one device slot) and is
  not modelled. GCC+Zhuge runs Zhuge over CoDel (``gcc-wirtc``: ``--queue=1 --qdisc=1``); Copa
  and Copa+Zhuge run over FIFO on the Wi-Fi families and CoDel on the cellular ones (the
  choice ``real-exp/tcp-summarize.awk`` reports), Copa+FastAck over FIFO.
- Video: 25 fps (``--fps=25 --interval=40``), rate 500 kbit/s to 100 Mbit/s (the GCC's
  ``min_configured_bitrate_bps_`` / ``max_configured_bitrate_bps_``; the encoder clamps to
  100 kbit/s-100 Mbit/s), packets of at most 1460 B (``MAX_PACKET_SIZE``).
- Encoder: the GCC flows' encoder produces 0.85 x 1000 / 1024 (0.830) of GCC's estimate
  (``encoder_share``, docs/scenario-format.md): ``PacketSenderUdp::UpdateSendingRate`` sets it to
  ``0.85 * m_controller->getSendBps()`` (``GccController::current_bitrate_bps_``, already within
  GCC's 0.5-100 Mbit/s), at each frame the sender packetises (``GetFECParam`` calls
  ``PacketSender::UpdateBitrate``) and every 40 ms (``m_cc_timer``); ``GameServer::UpdateBitrate``
  clamps it to 100 kbit/s-100 Mbit/s (never binding at 0.85 x 0.5 Mbit/s) and hands over ``bps >>
  10``, which ``DumbVideoEncoder::EncodeFrame`` reads as kbit/s (``bitrate * 1000 / 8 / fps``
  bytes a frame). Not modelled: that encoder's frames are exactly rate / fps and take a new rate
  at each frame (here RFC 8593's synthetic codec: 10 % size noise and key frames, a new rate at
  most every 200 ms; its exact codec, ``codec = "perfect"``, moves W1+W2's late frames by under
  5 %). Copa's encoder follows its own rule (below).
- No competing traffic in the trace runs (``--node_number`` sizes only the Wi-Fi topologies).
- ABW drop: the same path and queues; 30 Mbit/s x 15/13 (the k-traces go through the same
  ``BandwidthTrace``), Copa's baseline over CoDel (``tcp-static-exp.conf`` has ``copa-codel``).
  Run length and drop instant per controller, as the artifact's run lists have them: GCC 200 s
  with the drop at 144-176 s (``gcc-static-exp.conf``: ``--duration=200`` over
  ``static-exp/traces/k*-3600..4400.log``, made by ``ktrace_gen_all.sh``: the rate changes at line
  3600-4400 in steps of 40), Copa 72 s with the drop at 20-52 s (``tcp-static-exp.conf``, every
  Copa run of the figure: ``--duration=72`` over ``static-exp/testtraces/k*-500..1300.log``, made
  by ``static-exp/ktrace_gen_all.sh``: lines 500-1300). Both read a line per 40 ms (the only step
  that puts GCC's cuts inside its 200 s runs, and Copa's inside its 72 s). Each seed draws one
  instant per k in 144-176 s and Copa's is the same point of 20-52 s (the instant - 124 s). The
  testtraces' delay column (15.8 ms, then 16 - 0.2k ms) is not replayed (``BandwidthTrace`` is
  called with ``~DELAY_CHANGE``). Every figure of a drop run reads the 20 s after the drop, so
  the run is simulated to 1 s past that window when that comes before the artifact's run end
  (:func:`drop_run_seconds`): the same figures, bit for bit, in about 20 % less time. And the
  runs of one scheme, queue and seed are one run until their drop: they share it
  (:func:`run_drop_group`, :func:`lowlat.run_branches`), each going on from a copy of it a
  second before its drop with its own capacity, which gives its own run's figures bit for bit
  (a GCC group of 18 k costs what about 6 separate runs did).
- Copa: the artifact's own (``--copa artifact``, the default; ``cc_params.copa.variant =
  "artifact"``): ``src/internet/model/tcp-copa.cc``, ported from ccp_copa, which the paper's TCP
  runs used: the window moves once per half srtt (``kReportIntervalRtt``), from the latest RTT
  sample (``UseRttStanding`` false), velocity doubling after 3 srtt in one direction
  (``CheckAndUpdateDirection``), 4-packet minimum (``kMinCwndSegment``), ccp_copa's competitive
  and loss modes (``ReportMeasurement``, ``tcp_detected``; ``ModeSwitch`` true), pacing 2 x cwnd /
  srtt; lowlat-transport's ``copa_artifact.rs`` lists each rule. delta 0.5 for Copa and Copa+Zhuge
  (``fec-emulate.cc``: ``DefaultLatencyfactor = copaDeltaHundred / 100``, 50 unless a run gives
  ``--copadelta``; ``copa-fifo``/``-codel``/``-fifortc``/``-wirtc`` give none); Copa+FastAck is
  ``copa-fast2`` (the one ``real-exp/tcp-summarize.awk`` reports), run with ``--copadelta=2``:
  delta 0.02. The receiver acknowledges every packet (``ack_every = 1``: ``fec-emulate.cc`` sets
  ``ns3::TcpSocket::DelAckCount`` to 1; timestamps off, so ns-3 samples the RTT from the newest
  segment an ACK covers, as here). ``--copa paper`` runs the NSDI 2018 rules (per-ACK updates from RTT_standing,
  lowlat's default Copa) with delta 0.5 for every Copa scheme.
- The artifact's TCP under its Copa (with ``--copa artifact``; :func:`copa_transport`): ns-3.34's
  loss recovery with SACK (flow key ``recovery = "tcp"``, ``lowlat_transport::sender`` cites each
  rule from ``tcp-socket-base.cc`` and ``tcp-tx-buffer.cc``): a segment is lost once 3 later
  ones are acknowledged, a lost retransmission is found only by the retransmission timeout, the
  window is left to Copa in recovery (``HasCongControl``), and the timeout (RFC 6298, at least
  ns-3's ``MinRto`` 1 s, ``min_rto``; restarted on each advance of the cumulative
  acknowledgement, in fast recovery only on the first partial one) declares every segment in
  flight lost and sets Copa's window to one segment (``ReTxTimeout``); it is never doubled
  (``rto_backoff = false``: ``ns-diff.patch`` comments out ``ReTxTimeout``'s ``doubledRto``).
  1448 B segments (``ns3::TcpSocket::SegmentSize``): packets of 1488 B with the TCP and IPv4
  headers (timestamps off; the 2 B PPP header is not counted, as for the GCC flows). ``--copa
  paper`` keeps lowlat's QUIC-like transport (RFC 9002 recovery, 1460 B). Not modelled: its
  encoder over TCP (``PacketSenderTcp::UpdateSendingRate``: a duty-cycle rule; here the encoder
  follows Copa's cwnd / RTT_standing, docs/scenario-format.md), and that its RTT estimator has no
  sample from an ACK of data sent before a timeout (``m_history.clear``; here the sender's
  samples continue with the latest value).
- Zhuge: ``variant = "artifact"`` (the code above), with ``ack_copy``: the artifact's router
  holds a copy of each TCP ACK and forwards the original at once (``network-queue-zhuge.cc``
  ``OnRecv_snddev`` is a promiscuous receive callback, which ns-3.34's
  ``PointToPointNetDevice::Receive`` calls before it forwards the packet), so Copa+Zhuge's ACK
  clock is never delayed there: Zhuge acts on Copa only through its one-packet device queue.
  ``scenario(..., zhuge_ack_copy=False)`` (the scenario key ``bottleneck.zhuge.ack_copy``)
  holds the ACK itself, as the paper describes.
- GCC: the artifact's own port (``--gcc artifact``, the default; ``cc_params.gcc.variant =
  "artifact"``, lowlat-cc's ``GccConfig::artifact`` cites each rule): ``gcc-controller.cc``
  and ``sender-based-controller.cc``. Its receive rate is the last second of reported (under
  Zhuge: predicted) arrivals, each record carrying the bytes of every packet sent since the
  previous one, so lost bytes count (``getCurrentRecvRate``, ``intvl_pseudo_size``), and AIMD
  sees min(receive rate, its rate) (``processFeedback``); AIMD runs once per RTT clamped to
  10-200 ms, sooner only to reduce further (``last_update_ms_``, ``TimeToReduceFurther``), with
  the RTT the smallest of the last 15 records (``getCurrentRTT``); a decrease is to 0.85 x that
  rate with nothing subtracted, the near-capacity increase a packet per (RTT + 100 ms)
  (``in_experiment_`` false: twice libwebrtc's), and 1.5 x the receive rate + 10 kbit/s caps the
  rate in every state (``ChangeBitrate``, ``ClampBitrate``); no loss-based part
  (``UpdatePacketsLost`` is commented out) and no probing, so from 0.5 Mbit/s it climbs at 8 %/s
  (a constant 40 Mbit/s link: 36 Mbit/s after 56 s). The trendline, detector, threshold, 8 %/s
  and the link-capacity estimate are libwebrtc's (same constants). Its grouping
  (``packet-sender-udp.cc`` ``PacketSenderUdp::OnSocketRecv_sender``, which groups the reported
  packets before ``processFeedback`` sees them; lowlat-cc's ``gcc/inter_arrival.rs``): a
  reported packet sent more than 10 ms after its group's first opens a new group, with no burst
  merging (``burst_time``); each group's mean send and mean arrival time (integer microseconds;
  the first packet of the run counts in its group's count but not in its sums) give the deltas to
  the group before, each truncated to whole milliseconds, negative arrival deltas kept, and the
  sample's clock is the closed group's last arrival in whole ms (``group_mean_times``); a packet
  sent more than 20 frame intervals (800 ms) after the group's first is skipped and, as the
  group's start then never moves, so is every later one: the delay-based part stops for the rest
  of the run (``group_max_span``; it happened once in the W1+W2 runs, GCC+CoDel on
  ``rest-wifi_14`` at 223 s, where no packet sent in 2.15 s got through, costing that run 0.6 %
  of its throughput); and ``processFeedback`` runs only when a group closes, so the receive-rate
  record (with the bytes of every packet *sent* since the previous record, from the sender's
  transit history), the RTT record (the smallest of the last 15 is the RTT) and AIMD happen
  once per group (``update_per_group``). No stream time-out. ``--gcc libwebrtc``: lowlat's
  goog_cc (probing, loss-based part, 500 ms window).
- Loss repair: the artifact's sender (``--policy=rtx``, ``RTXOnlyPolicy``, ``--ddl=1000``):
  the GCC flows run with ``repair = "timeout"`` (:mod:`lowlat_media::timeout_rtx` cites each
  rule): the receiver acknowledges every packet (``PacketReceiverUdp::ReplyACK``); the sender,
  checking every 1 ms (``CheckRetransmission``), resends a frame's unacknowledged packets (its
  packet group: with RTXOnlyPolicy a group is a frame) when one was last sent more than srtt + 4
  standard deviations of all RTT samples + the group's packets x the receiver's inter-arrival
  ago (``IsRtxTimeout``), ahead of new media (``SendRtx``), for frames 50 ms to 1 s old
  (``min_rtt``, ``MissesDdl``). Its RTT samples are those ACKs' (``UpdateRTT``, gain 0.2), which
  cross the downlink queue under Zhuge too: the AP rewrites only the congestion feedback.
  (``OnSocketRecv_sender`` skips ``UpdateRTT``, and the receiver's loss rate for GCC, when
  ``trace_set`` is true: a member nothing initialises, as ``SetTrace`` is never called; if it read
  true the timeout would stay 50 + 4 x 12 ms. Undefined; the samples are taken here, as the code
  intends: with the timeout fixed so, spurious retransmissions give both GCC schemes about twice
  the late frames on W1+W2 and GCC+Zhuge 8.9 % of its RTT above 200 ms, nothing like the paper.)
  ``--repair nack``: WebRTC's NACK/RTX instead (libwebrtc's rules: the receiver repeats a NACK
  after the largest RTCP RTT of the last 1.5 s, the sender answers once per RTT within its target
  rate over 500 ms; docs/scenario-format.md). Copa's transport retransmits on its own.

What the artifact's GCC sender gets under Zhuge (``network-queue-zhuge.cc``, ``packet-*-udp.cc``,
``sender-based-controller.cc``): the AP samples the first data packet arriving while no sample is
pending and 1 ms later (``Sendback``) sends a ``NetState`` of that one packet with its predicted
arrival (now + the predicted delay, with the bytes that came after it left out), loss 0 and
dispersion 0, only if its id is newer than the last reported; the AP never tells of a packet
its queue drops later (the report leaves when the packet arrives), so GCC's loss input under
Zhuge is always 0, and ``processFeedback`` counts every packet sent between two reported ones
into the acknowledged rate (``intvl_pseudo_size``). The receiver's own ``NetState`` is gated by
``GameClient::wirtc``, which nothing initialises (so whether it is also sent is undefined); its
per-packet ACKs always reach the sender unchanged (the AP handles only TCP ACKs). Here the AP
does the same (``--in-band sampled``, the default: ``bottleneck.zhuge.in_band = "sampled"``, see
``lowlat_assist::zhuge``), and the artifact's GCC counts every packet sent since the last record
(``--gcc artifact``), so one report a millisecond carries the whole rate. ``--in-band
per-packet`` reports every packet's prediction, every 1 ms (the schedule to use with ``--gcc
libwebrtc``, whose receive rate counts only the packets reported: sampled, it stays near one
packet a millisecond); only a packet the queue drops within that millisecond is reported lost
there: CoDel drops at the head, after its 5 ms target, so GCC's loss input under Zhuge is 0 with
either schedule (no report with a loss on ``rest-wifi_0`` or ``pitree4g_0``).

**Pacing.** The artifact's sender does not pace (``m_pacing`` false: a frame leaves in one burst
at the sender's 1 Gbit/s link); here the GCC flows pace at 2.5 x their target unless
``--unpaced`` (GCC's pacing factor at its maximum, a 1 Gbit/s access link). It matters most for
GCC+Zhuge on fast links: on ``pitree4g_0`` (about 80 Mbit/s, never under 1 Mbit/s; 60 s)
GCC+Zhuge sends 2.7 Mbit/s paced and 22 Mbit/s at 20 x or unpaced, GCC+FIFO 20.6 and 48 Mbit/s
(its 200 ms capacity dips cause this: see *GCC+Zhuge sends less* below). Unpaced, with the
artifact's repair, GCC+Zhuge / GCC+FIFO throughput (300 s, one seed):
``xu4g_0`` 0.78, ``xu4g_2`` 1.23, ``xu5g_0`` 0.46, ``xu5g_2`` 0.84, ``xu5g_4`` 0.98,
``pitree4g_0`` 0.42, ``pitree4g_10`` 0.73 (paced: 1.13, 0.63, 0.09, 0.21, 0.86, 0.09, 0.11),
with many more retransmissions (GCC+FIFO on ``xu5g_0``: 216 315). ``--unpaced`` is not the
default because it made every GCC scheme here much worse on W1+W2 with lowlat's goog_cc: with
the encoder share, frames later than 400 ms 0.069 (GCC+FIFO) and 0.051 (GCC+Zhuge; -27 %), RTT
above 200 ms 0.049 and 0.033, throughput 13.0 and 7.7 Mbit/s (paced: 0.032 and 0.032, 0.025 and
0.011, 5.6 and 4.8 Mbit/s; one seed). With the artifact's GCC and its grouping the gap is small
(W1+W2, one seed, unpaced against paced): late frames 0.0342 and 0.0311 (-9 %) against 0.0303
and 0.0315, RTT above 200 ms 0.0327 and 0.0166 against 0.0274 and 0.0129, throughput 5.9 and
3.9 Mbit/s against 5.1 and 3.9; the default is left paced (a decision about the evaluation, not
made here). The artifact's sender keeps no send queue (``SendFrame`` schedules ``SendPacket`` at
once, which hands every queued packet to the socket), so it neither discards stale packets, as
lowlat's pacer does after 2 s of queue, nor speeds up to drain them, as libwebrtc's does:
``--unpaced`` is its model (the pacer never holds a packet then), so no pacer rule is added.

``--gcc-zhuge-queue fifo`` runs GCC+Zhuge over the FIFO instead (no CoDel drops to repair).

Deliberate differences: the project's Copa and video model. Of the artifact's GCC
(``gcc-controller.cc``, ``sender-based-controller.cc``, ``PacketSenderUdp::OnSocketRecv_sender``)
``--gcc artifact`` takes every rule but a few minor ones that ``GccConfig::artifact`` lists (its
5 s initialisation at the minimum rate, the first group's initialising ``processFeedback``, its
16-bit packet ids' wrap every 65 536 packets). Its AP reports one
sampled packet a millisecond with an independent prediction, which may run backwards after a
dip and which the artifact's grouping averages (libwebrtc's would drop it as reordered):
``--in-band sampled``, the default, does the same. ``--in-band per-packet`` reports every
packet, in order (``lowlat_assist::zhuge``); figures with it: W1+W2, GCC+Zhuge against
GCC+FIFO, RTT above 200 ms 0.0129 vs 0.0274 (-53 %), late frames 0.0315 vs 0.0303 (+4 %),
throughput 3898 vs 5060 kbit/s (0.77). ``--gcc
libwebrtc`` differs further: libwebrtc's 5 ms grouping with burst merging, a 500 ms receive rate
of received bytes only, probing, goog_cc's loss-based part (feedback-only mode, once a second).
Both cut to 0.85 x the receive rate on over-use and recover at 8 %/s.

Where the results depart from the paper, and why (see ``gcc_rate_timeline.png`` and
``abw_drop_timeline.png``). Figures with every default above (the artifact's queues, Copa and
repair) but ``--gcc libwebrtc`` (lowlat's goog_cc, the GCC before the artifact's became the
default; the first bullet has the artifact's), measured with ``lowlat reproduce zhuge --traces
<the 16 rest-wifi/office-wifi files of ../shared/traces/zhuge> --ks 10 --seeds 5`` (W1+W2
pooled: ratios averaged over the 16 traces, late frames pooled over their frames; the trace runs
use one seed whatever ``--seeds``):

- *The defaults* (``--gcc artifact`` with its grouping, ``--in-band sampled``; ``lowlat reproduce
  zhuge --traces ../shared/traces/zhuge --no-plots``, one seed; the ABW drop k = 10 over 5 seeds):
  GCC+Zhuge against GCC+FIFO on W1+W2: RTT above 200 ms 0.0132 vs 0.0274 (-52 %); late frames
  (the artifact's accounting) 0.0334 vs 0.0303 (+10 %; by cause, given up / repaired / waited /
  queued: 1482 / 1184 / 635 / 498 against 396 / 121 / 92 / 2841); throughput 4112 vs 5060 kbit/s
  (0.81). ABW drop, the artifact's statistic: GCC+Zhuge 1.01 vs GCC 2.05 s (-51 %), Copa+Zhuge
  2.01 vs Copa 2.63 s (-24 %). Per family, GCC+Zhuge / GCC+FIFO throughput: C1 0.86, C2 0.81,
  C3 0.76, W1 0.78, W2 0.83, abc4g 0.84; RTT above 200 ms lower with Zhuge in every family
  (abc4g 0.055 vs 0.158). The next bullet has the same with ``--in-band per-packet``.
- *With the artifact's GCC and its grouping, every packet reported* (``--in-band per-packet``,
  the default before the artifact's sampled reports; same command): GCC+Zhuge against GCC+FIFO on W1+W2: RTT above
  200 ms 0.0129 vs 0.0274 (-53 %); late frames (the artifact's accounting) 0.0315 vs 0.0303
  (+4 %; GCC+CoDel 0.0324); throughput 3898 vs 5060 kbit/s (0.77; GCC+CoDel 4955). Late frames by
  cause (given up / repaired / waited / queued): GCC+FIFO 396 / 121 / 92 / 2841, GCC+Zhuge 1479 /
  1177 / 622 / 302. ABW drop (k = 10, 5 seeds, the artifact's statistic): GCC+Zhuge 1.00 vs GCC
  2.05 s (-51 %; before the grouping 1.43 vs 3.05 s). The grouping raises both schemes'
  throughput (GCC+FIFO by 26 %, GCC+Zhuge by 18 %), so it does not close the gap. Its two parts
  apart (W1+W2, GCC+Zhuge / GCC+FIFO): the groups and mean times alone (records and AIMD per
  report) 3843 vs 5220 kbit/s (0.74), late frames -4 %, RTT -56 %; the records and AIMD once per
  group alone (libwebrtc's 5 ms groups with burst merging) 3685 vs 3831 (0.96), late +9 %, RTT
  -55 %. Neither is a condition to drop: the artifact has both. Unpaced (``--unpaced``, the
  artifact's sender, see "Pacing"), with the grouping: RTT above 200 ms 0.0166 vs 0.0327
  (-49 %), late frames 0.0311 vs 0.0342 (-9 %), throughput 3936 vs 5899 kbit/s (0.67; before the
  grouping -46 %, -13 %, 4612 vs 7620 kbit/s, 0.61). Per family on the whole shipped set
  (``--traces ../shared/traces/zhuge --no-plots``), GCC+Zhuge / GCC+FIFO throughput: C1 0.88
  (14 807 vs 16 894 kbit/s), C2 0.75, C3 0.71, W1 0.72, W2 0.80, abc4g 0.88 (before the grouping
  0.95, 0.81, 0.32, 0.76, 0.86, 0.89); RTT above 200 ms C2 0.018 vs 0.027, C3 0.025 vs 0.031,
  abc4g 0.055 vs 0.158; late frames C3 0.040 vs 0.027 (worse), the others within 0.003.
- *With the artifact's GCC before its grouping was modelled* (libwebrtc's 5 ms groups with
  burst merging, records and AIMD per report; same command, ``--seeds 1``):
  GCC+Zhuge against GCC+FIFO on W1+W2: RTT above 200 ms 0.0103 vs 0.0238 (-57 %); late frames (the
  artifact's accounting) 0.0299 vs 0.0284 (+5 %); P99 RTT 197 vs 1369 ms; throughput 3312 vs 4031
  kbit/s (0.82; per trace 0.66-1.14), both below goog_cc's (4818 vs 5606): without probing it
  climbs from 0.5 Mbit/s at 8 %/s and each cut leaves it to the additive increase. ``pitree4g_0``
  2145 vs 1998 kbit/s (1.07; goog_cc: 2082 vs 15 444), ``xu5g_0`` 1290 vs 5959 (0.22; goog_cc 1607
  vs 43 261). The 40 Mbit/s link with a 200 ms dip every 5 s (below, run through :func:`scenario`
  with a rate schedule, 10-40 s): 1455 vs 1167 kbit/s, both held down by the dips (goog_cc there:
  1365 vs 10 238). ABW drop (k = 10, one seed, the artifact's statistic): GCC+Zhuge 1.49 vs GCC
  3.26 s (goog_cc, the same seed: 1.38 vs 3.76 s). So the artifact's GCC does not keep GCC+Zhuge's
  throughput either: its 1 s receive rate of predicted arrivals falls during a dip as lowlat's 500
  ms one does, and capped by the rate it cuts below the rate itself. One rule reverted at a time
  (W1+W2, GCC+Zhuge / GCC+FIFO): AIMD at every report instead of once per RTT 0.96 (goog_cc's 1
  kbit/s floor per multiplicative step then adds up to 1 Mbit/s a second under Zhuge's report per
  millisecond), the receive rate not capped by the rate 0.94, a 500 ms window 0.85, neither the cap
  lowering a held rate nor lost bytes 0.82 (none a condition: the artifact has each).
- *GCC+Zhuge against GCC+FIFO on W1+W2*: RTT above 200 ms 0.0108 vs 0.0250 (-57 %, as the paper);
  frames later than 400 ms (the artifact's accounting) 0.0315 vs 0.0316 (0 %; the paper: -30 % or
  more; by completion alone 0.028 vs 0.033, -17 %); P99 RTT 209 vs 1067 ms; throughput 4818 vs
  5606 kbit/s (0.86; per trace 0.58-1.56; the paper: unchanged). Why the late frames do not
  follow the RTT (``summary.csv``'s causes, :func:`late_frame_causes`):

  - Two traces hold two thirds of both schemes' late frames: ``office-wifi_6`` (25 % of its time
    under GCC's 0.5 Mbit/s minimum, 0.83 x that for the encoder) 1502 (GCC+FIFO) and 1551
    (GCC+Zhuge), ``rest-wifi_14`` (15 %) 919 and 958. No rate control avoids them: GCC+FIFO's
    wait in its 350-packet queue (seconds at 0.4 Mbit/s), GCC+Zhuge's are dropped by CoDel and
    given up or repaired late. Without them: 1078 against 1172 late frames (-8 %).
  - The two schemes are late for opposite reasons. Of GCC+FIFO's 3593 late frames 3013 are
    *queued* (its own packets 400 ms late), 363 given up, 112 repaired, 105 waited behind one.
    Of GCC+Zhuge's 3587, 325 are queued (Zhuge removes 90 % of those), but 1453 were given up,
    1171 completed only after a retransmission and 638 waited behind such a frame: CoDel drops
    what GCC+FIFO's drop-tail FIFO would have queued, and the artifact's repair (srtt + 4
    deviations, then the queue again) plus in-order decoding (every later frame
    waits) turn each drop into late frames. Over the FIFO instead (``--gcc-zhuge-queue fifo``):
    3116 against 3593 (-13 %), and -40 % without the two traces (700 against 1172), its late
    frames then mostly queued (2601 of 3116).
  - Where GCC+Zhuge's target collapses to GCC's minimum after an outage (``office-wifi_14`` at
    56 s: 0.4 s at 65 kbit/s, then 19 Mbit/s again) the pacer drains frames encoded at the old
    rate at 2.5 x 0.5 Mbit/s for 2 s and then discards the 50 frames still queued (its 2 s
    limit): 56 frames given up in a row where GCC+FIFO, which cut only to 3 Mbit/s, has none.
    The artifact's unpaced sender would hand them to the network at once ("Pacing" below).
  - The encoder share (the artifact's 0.83 of GCC's estimate) removes about a fifth of both
    schemes' late frames (at the target: 0.0411 and 0.0396, -4 %) and lowers both throughputs
    (at the target 9260 and 6393 kbit/s): lowlat's GCC decreases to 0.85 x the acknowledged
    rate, now 0.83 of its estimate, and its link-capacity estimate then holds it to additive
    increase, so the estimate drifts down on fluctuating traces (``office-wifi_10``: GCC+FIFO
    from 20 to 6 Mbit/s over the run, capacity 34 Mbit/s; 10.3 Mbit/s on average against 21.4 at
    the target, 10.7 at a share of 0.9) and stays below the link on a constant one (34 Mbit/s,
    300 s: 21.6 against 30.1 Mbit/s).
  - The accounting follows the artifact's decoder and scripts rule by rule (below), so it is not
    the cause; the artifact's exact encoder (``codec = "perfect"``) moves W1+W2's late frames by
    under 5 % (GCC+FIFO 0.0302, GCC+Zhuge 0.0309).
- *GCC+Zhuge sends less* on most W1+W2 traces (0.58-1.56 of GCC+FIFO, 0.86 on average with the
  encoder share; the figures in this bullet are at the encoder's target, before the share: 0.49-0.95) and on the cellular traces
  (one seed: ``pitree4g_0`` 0.08, ``xu4g_0`` 0.22, ``xu5g_0`` 0.03). The cause is the traces' short
  capacity dips, not a defect found in either (each step held against the artifact's code and
  libwebrtc's): a 200-400 ms line far below its neighbours (``rest-wifi_0`` has 39 single lines
  under a quarter of its median in 1452; 3.9 % of the W1+W2 lines are runs of one or two under half
  of the lines around them). During a dip the Fortune Teller predicts the queued packets' delay at
  the dip's dequeue rate (up to seconds at its 512 kbit/s floor), the AP reports those arrivals at
  once, GCC's acknowledged rate (the last 500 ms of reported arrivals) falls to the dip's rate (the
  artifact's GCC, whose receive rate is the last second of the same predicted arrivals, would read
  it alike while the dip lasts) and AIMD cuts to 0.85 x it; it climbs back at 8 %/s, or additively
  (~40 kbit/s per second) while the link-capacity estimate set at the cut holds, and the next dip
  comes before it is back: on ``pitree4g_0`` (a dip every ~5 s) it cuts from 7.2 to 2.0 Mbit/s at
  13.2 s and is still at 2.5 Mbit/s at 30 s. A receiver reports the dip after it ended, with the
  burst that followed, so GCC+FIFO's acknowledged rate barely moves (10.3 Mbit/s at its cut there,
  to 8.8). The same immediacy is what shortens GCC's time above 200 ms after a lasting drop (the ABW
  drop below). Evidence: with those runs filled with the lower neighbour's rate (an analysis copy of
  the traces, not a condition), W1+W2 pooled gives 11 247 (FIFO) vs 10 821 kbit/s (Zhuge), 0.96, RTT
  above 200 ms -59 % (dips filled only where under a quarter of both neighbours: 0.86);
  ``pitree4g_0`` 0.83; ``xu4g_0`` and ``xu5g_0`` stay low (0.21, 0.08: outages of 0.4-2 s and more).
  A 40 Mbit/s link with a 200 ms dip to 2 Mbit/s every 5 s: 22.2 vs 1.4 Mbit/s
  (``gcc_zhuge_keeps_gcc_fifos_rate_through_200_ms_capacity_dips`` in lowlat-sim's
  ``tests/zhuge.rs``, ignored while it fails); on a constant link the two match after ramp-up. Tried
  and not kept: reporting arrivals out of order after a dip (as the artifact's independent
  predictions are), in whole or only where no packet is queued ahead: worse (``pitree4g_0``, 60 s:
  1.9 against 2.7 Mbit/s), libwebrtc's grouping dropping them as reordered; libwebrtc's Bayesian
  acknowledged-bitrate estimator instead of the window: ``rest-wifi_0`` unchanged (1.6 Mbit/s over
  60 s) while GCC+FIFO on ``pitree4g_0`` fell from 20.6 to 3.9 Mbit/s. FqCoDel's 10 240-packet
  buffer lowers it further on the Wi-Fi traces (0.79 of GCC+FIFO with the NACK repair of the time;
  0.95 with lowlat's 300 ms CoDel buffer), with fewer drops, so not through loss.
- *Copa+Zhuge against Copa after the ABW drop* (the artifact's statistic, k = 10, the better
  of FIFO and CoDel), with the artifact's TCP (above): 5 seeds 2.00 vs 2.63 s (-24 %), 20 seeds
  2.04 vs 2.53 s (-19 %; a bootstrap over the seeds gives -25 % to -14 %); with the artifact's
  ACK copy (the default, below) 5 seeds 2.01 vs 2.63 s (-24 %), 20 seeds -19.6 %; both over CoDel
  (over FIFO 4.78 / 5.65 s with 5 seeds). The episode now ends through a retransmission
  timeout: CoDel drops a retransmission, nothing but the 1 s timeout finds it, Copa's window
  falls to one segment and the queue drains (Copa over CoDel, seed 1: the send rate falls to
  0.1 Mbit/s 2.0-2.5 s after the drop, the smoothed RTT is back under 200 ms at 2.6 s; with
  RFC 9002's recovery it stayed near 3.5-5 Mbit/s until 5.7 s). Per seed the CoDel episodes
  are 2.0-2.7 s for Copa and 1.6-2.3 s for Copa+Zhuge, in two groups a timeout apart, so small
  changes move the mean: with 1460 B packets instead of 1488 B the 20-seed change is -10 %
  (2.20 vs 2.45 s), with 1490 B (the PPP header counted) -14 % (2.10 vs 2.44 s): whether the
  paper's 14 % holds is within what the model resolves; that Copa+Zhuge is shorter (by 10-20 %)
  is not. With lowlat's QUIC-like transport (the previous model): 5 seeds 4.57 vs
  5.28 s (-13 %), 20 seeds 4.54 vs 5.45 s (-16.5 %, -21 % to -12 %); Copa+Zhuge shorter on
  18 of 20 seeds over CoDel, 15 of 20 over FIFO. Where the artifact's Zhuge differs: its router
  forwards each TCP ACK at once and sends a copy after the hold (``network-queue-zhuge.cc``
  ``OnRecv_snddev`` runs as a promiscuous receive callback, and ns-3's devices hand the packet
  up for forwarding after it), so the ACK Copa acts on is never held there; lowlat models that
  (``bottleneck.zhuge.ack_copy``, on here; off, the ACK itself is held). Without the hold (``zhuge.max_hold = "0 s"``), 20 seeds: -19.6 % with the artifact's
  TCP (the holding changes nothing there: the 1-packet device queue under Zhuge lets CoDel act
  on the whole queue), -6.7 % with the QUIC-like transport.
  GCC+Zhuge 1.37 vs GCC 3.43 s (-60 %). Before the artifact's TCP, the artifact's queues made most of Copa's difference:
  Copa over CoDel keeps the 100-packet device FIFO CoDel cannot see (~340 ms at the dropped
  rate), Copa+Zhuge's device FIFO is one packet. What remains: after the drop the artifact's Copa
  shrinks by about a packet per half srtt and doubles its velocity only after 3 srtt in one
  direction, so it keeps sending at 2-3x the new capacity for ~4 s whatever signals it first; the
  ACK holding (at most 10 ms, ``kMaxActualDelay``) shortens that a little. Earlier models, for
  comparison: one queue per link, lowlat's 300 ms CoDel buffer and the paper's Copa: Copa 2.61 vs
  Copa+Zhuge 2.83 s (+8 %); the artifact's Copa on those queues: 4.67 vs 4.25 s (-9 %; 20 seeds
  -11 %); the artifact's queues with the paper's Copa: 4.31 vs 3.77 s (-12.5 %).
- *Copa over the Wi-Fi traces* (W1+W2, one seed, the artifact's TCP), with the ACK itself held
  (``ack_copy`` off): RTT above 200 ms 0.90 %
  (Copa) vs 0.61 % (Copa+Zhuge), late frames 0.067 vs 0.059 (-12 %), P99 RTT 194 vs 156 ms,
  throughput 24.6 vs 22.2 Mbit/s (with lowlat's QUIC-like transport: 0.87 % vs 0.56 %, 0.065 vs
  0.057, 192 vs 154 ms, 24.6 vs 22.0 Mbit/s). Over these FIFOs the difference is the ACK holding
  alone (Copa never fills 251 packets): without it (the artifact's ACK copy, the default, see
  above) Copa+Zhuge gives Copa's figures exactly (``table_W1.csv``, ``table_W2.csv``). Copa+FastAck (not measured again with the TCP) at the run lists' delta 0.02 has 34 % of its frames later than 400 ms without
  losses: its frames of ~170 kB (the encoder follows cwnd / RTT_standing, and FastAck's RTT stops
  at the AP) take 100-500 ms to leave the sender.
- *Copa over the cellular traces* (the defaults, one seed; ``--traces ../shared/traces/zhuge``):
  on C1 Copa+Zhuge has three times Copa's late frames (the artifact's accounting, 7436 against
  2442 of 220 919; given up / repaired / waited / queued 179 / 1887 / 2170 / 3200 against
  20 / 721 / 302 / 1399) for about the same time above 200 ms (1.27 % against 1.34 %) and
  throughput (56.7 against 57.6 Mbit/s). The cause is the artifact's queues, not Zhuge's
  signal: Copa's CoDel stands in front of the 100-packet device FIFO, which holds most of its
  queue where CoDel does not look, while under Zhuge the device FIFO is one packet and CoDel
  sees the whole queue. Over the 32 C1 traces the bottleneck dropped 28 519 packets under
  Copa+Zhuge against 8 290 under Copa (0.069 % against 0.020 % of the packets sent); the
  artifact's TCP repairs each a round trip or more later (a dropped retransmission only after
  its 1 s timeout), and in-order decoding holds the frames behind it. C2: RTT above 200 ms
  1.5 % against 2.4 %, late frames 0.102 against 0.090; C3 alike (1.6 % both). So the paper's
  gain for Copa over traces is not reproduced (the ABW-drop gain is, above).
- ``--gcc-zhuge-queue fifo`` (GCC+Zhuge over a 251-packet FIFO, no CoDel drops): late frames
  0.0274 against GCC+FIFO's 0.0316 (-13 %), RTT above 200 ms 0.018 against 0.025, at 0.86 of its
  throughput (one seed, every other default).

No constant was tuned to a trace or a figure; each condition above comes from the artifact.

**How frames are counted.** As the artifact's scripts do (``real-exp/stat.sh`` runs
``app_delay.awk`` over every run of a family, ``log2cdf.sh`` makes the CDF of the delays, and
``summary_stat.sh`` reads at ``$1 >= 400`` the share of frames whose delay is 400 ms or more;
pooled over the family's runs), :func:`in_order_frame_delays` replays the artifact's decoder
(``VideoDecoder::DecodeDataPacket``, ``src/bitrate-ctrl/model/video-decoder.cc``) on each run's
:attr:`lowlat.Result.frames` (when each frame completed, and when each newest frame first
arrived), rule by rule:

- A frame's delay is the instant of its last "decode: frame" or "discard frame" line minus its
  send time (``app_delay.awk``: ``rcv[id]`` is overwritten by each later line; ``snd`` comes from
  a "send frame" line that the published code does not print: the nearest, ``GameServer::
  SendFrame``'s "Send frame", is written when the encoder hands the frame over, the capture
  instant here). A frame with no line by the end of the run is not counted (the loop runs over
  ``rcv``); so the denominator is every frame that left the decoder.
- Frames decode in order (``m_lastPlayedFrameId``): a complete frame waits for every earlier one
  to be decoded or given up; frame 0 is decoded on completion.
- A frame still incomplete when a packet of a frame 25 or more newer arrives is given up then
  (``delay_ddl / m_frameInterval``: 1000 / 40 with ``--ddl=1000 --fps=25``), so a given-up frame
  is late; frames with no packet at all are given up alike.
- After giving up several frames at once, the decoder sets its last played id to each frame it
  gives up in turn, even past frames it has just decoded behind it: those are given up again,
  one per newer frame that arrives, about 1 s later, and that later line is their delay. It needs
  a whole frame to go missing behind an incomplete one; it never happened in the W1+W2 runs below
  (the replay without it gives the same counts), but it is replayed.

``summary.csv`` splits each run's late frames by cause (:func:`late_frame_causes`:
``frames_late_given_up``, ``_repaired``: complete only after a retransmission, ``_waited``: held
behind an earlier frame, ``_queued``: its own packets 400 ms late).
``ratio_frame_delay_over_400ms`` (lowlat's summary metric, kept next to it): a frame's delay is its
completion, with no in-order wait, and a frame never completed counts as late; the tables average
it over the traces (the traces run 255-297 s, so pooling would weigh them almost alike).

**The ABW-drop statistic.** The artifact's (``static-exp/output-stat.awk``, ``summary-stat.awk``,
``tcp-static-exp.conf``): over the sender's log lines in the 20 s after the drop (one per
millisecond), the time from the first smoothed RTT above 200 ms to the first one back below (one
episode; 20 s if it never comes back, 0 if it never goes above), averaged over the runs, each
scheme scored by the better of its FIFO and CoDel runs (Copa: ``copa-fifo``/``copa-codel``,
Copa+Zhuge: ``copa-fifortc``/``copa-wirtc``). The smoothed RTT is the sender's: Copa's is ns-3's
``RttMeanDeviation`` of its ACK samples (gain 1/8, the socket's ``RttNet`` estimate), so it
includes Zhuge's ACK holding; GCC's is ``PacketSenderUdp::UpdateRTT`` (gain 0.2) of its feedback
RTT samples. Here (:func:`first_episode_s`, :func:`smoothed_rtt`): the same rule on the mean of
the simulated sender's samples (:attr:`lowlat.Result.sender_rtt`: Copa's latest sample at each
ACK, GCC's one per feedback report; under Zhuge both pass through the AP, so the ACK holding and
the in-band reports are in them), every ABW scheme run over FIFO and over CoDel
(``abw_drop_artifact.csv``: ``GCC`` is GCC+FIFO/GCC+CoDel). The runs last as the artifact's: GCC
200 s with the drop at 144-176 s, Copa 72 s with the drop at 20-52 s (see the conditions above).
Today's statistic stays next to it (``abw_drop.csv``): the seconds with the network RTT above
200 ms (200 ms bins), each scheme on its own queue. The GCC sender's samples are its ACKs' with
the artifact's repair (``repair = "timeout"``: they cross the downlink queue under Zhuge too, as
the artifact's ``UpdateRTT`` takes them), its feedback reports' with ``--repair nack`` (then
GCC+Zhuge's samples span only the sender-AP path and its statistic is 0). Measured with the
defaults (k = 10, 5 seeds; FIFO / CoDel; the network RTT above 200 ms in brackets): GCC 3.43 /
5.99 s (3.44 / 6.00), GCC+Zhuge 1.37 / 1.75 s (1.40 / 1.76), Copa 5.65 / 2.63 s (5.60 / 2.60),
Copa+Zhuge 4.78 / 2.00 s (4.80 / 1.92) (the Copa runs with the artifact's TCP; with lowlat's
QUIC-like transport Copa 5.54 / 5.28 s, Copa+Zhuge 5.18 / 4.57 s). GCC over CoDel is worse than
over FIFO: CoDel acts only
beyond the device's 100 packets and FqCoDel's 10 240-packet buffer never cuts the queue.

RTT here is the network's: a packet's one-way delay plus the reverse path's propagation delay, the
same for every scheme (a sender's own RTT samples would shrink under Zhuge, whose feedback skips
the downlink queue).

Without ``--traces`` the families are the project's own generated traces (one per family, written
to ``DIR/traces``); with it, trace files (two-column ``<s> <Mbit/s>`` or mahimahi, told from the
content or ``--trace-format``) or folders of them, each file's family told from its name
(``rest-wifi*`` W1, ``office-wifi*`` W2, ``pitree4g*`` C1, ``xu4g*`` C2, ``xu5g*`` C3, otherwise
the name before the last ``_``).
"""

from __future__ import annotations

import functools
import os
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from .. import _native
from .common import FAMILIES as FAMILIES
from .common import family_of as family_of
from .common import Runner, check_seconds, digest, failure_lines, family_traces, results_folder, run_grid, write_csv
from .common import find_traces as find_traces
from .common import generate_trace as generate_trace

#: The schemes of the paper: (label, controller, queue, assistance). Queue "fifo/codel": FIFO on
#: the Wi-Fi families, CoDel on the cellular ones (and in the ABW drop), as the artifact's
#: ``tcp-summarize.awk`` and ``tcp-static-exp.conf`` have it.
SCHEMES = [
    ("GCC+FIFO", "gcc", "fifo", "none"),
    ("GCC+CoDel", "gcc", "codel", "none"),
    ("GCC+Zhuge", "gcc", "codel", "zhuge"),
    ("Copa", "copa", "fifo/codel", "none"),
    ("Copa+FastAck", "copa", "fifo", "fastack"),
    ("Copa+Zhuge", "copa", "fifo/codel", "zhuge"),
]
#: The ABW-drop experiment's schemes and factors (the paper's).
ABW_SCHEMES = ["GCC+FIFO", "GCC+Zhuge", "Copa", "Copa+Zhuge"]
ABW_KS = [2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 25, 30, 35, 40, 45, 50]
METRICS = [
    "ratio_rtt_over_200ms",
    "frame_late_ratio_artifact",
    "ratio_frame_delay_over_400ms",
    "ratio_fps_below_10",
    "rtt_p99_ms",
    "frame_delay_p99_ms",
    "throughput_kbps",
]
#: The paper's evaluation conditions, each from the public artifact (see the module doc).
CONDITIONS: dict[str, Any] = {
    "trace_step_ms": 200.0,  # fec-emulate.cc: traceInterval = 200
    "trace_scale": 15.0 / 13.0,  # fec-emulate.cc BandwidthTrace: stod(bw) / 13. * 15.
    "max_seconds": 300.0,  # *-exp-trace.conf: --duration=300, cut to lines x 200 ms
    "access_ms": 9.0,  # BuildWiredTopo: sender-router "9ms"
    "last_hop_ms": 25.0,  # TOPO_DEFAULT_PDELAY = 25 (router-client, each way)
    "uplink": "300 Mbit/s",  # TOPO_DEFAULT_BW: the client's device is never re-rated
    # The bottleneck's queue: a traffic-control qdisc in front of the point-to-point device's own
    # FIFO (BuildWiredTopo: TrafficControlHelper::SetRootQueueDisc on every device), with ns-3's
    # flow control between them (queue.device_limit, docs/scenario-format.md).
    "pfifo_packets": 250,  # qdisc=0: PfifoFastQueueDisc "MaxSize" "250p"
    "codel_packets": 10240,  # qdisc=1: FqCoDelQueueDisc, ns-3.34 default MaxSize "10240p"
    "device_packets": 100,  # ns-3.34 DropTailQueue<Packet> default MaxSize "100p" (PointToPointHelper)
    "zhuge_device_packets": 1,  # network-queue-zhuge.cc InitSocket: m_dlQueue->SetMaxSize("1p")
    "fastack_device_packets": 1000,  # network-queue-fastack.cc InitSocket: SetMaxSize("1000p")
    "fps": 25,  # --fps=25 --interval=40
    "rmin": "500 kbit/s",  # GccController min_configured_bitrate_bps_(500000)
    "rmax": "100 Mbit/s",  # GccController max_configured_bitrate_bps_; GameServer kMaxEncodeBps
    "packet_size": "1460 B",  # NetworkPacket::MAX_PACKET_SIZE
    "abw_mbps": 30.0,  # ktrace_gen.sh: 30Mbps, then 30/k (scaled like every trace line)
    # *-exp-trace.conf: --policy=rtx (RTXOnlyPolicy: lost packets retransmitted, no FEC) with
    # --ddl=1000 (1 s frame deadline): the GCC flows repair as the artifact's sender does
    # (repair = "timeout", lowlat_media::timeout_rtx; --repair nack: WebRTC's NACK/RTX instead);
    # Copa's transport retransmits on its own.
    "repair": "timeout",
    # The GCC flows pace at 2.5 x their target (lowlat's GCC). The artifact's sender does not pace
    # (PacketSenderUdp: m_pacing {false}: a frame leaves in one burst at the sender's 1 Gbit/s
    # link, BuildWiredTopo: DataRate 1e9); --unpaced models that: GCC's pacing factor at its
    # maximum releases a frame at once and the access link's rate spaces it. Not the default: see
    # "Pacing" in the module doc for what it does to every GCC scheme here.
    "paced": True,
    "access_rate": "1 Gbit/s",
    # The GCC flows' encoder runs at 0.85 x GCC's estimate (PacketSenderUdp::UpdateSendingRate:
    # m_bitrate = 0.85 * m_controller->getSendBps(), GccController's current_bitrate_bps_, at
    # every frame and every 40 ms), handed to the encoder as bps >> 10 (GameServer::UpdateBitrate,
    # after clamping to 100 kbit/s-100 Mbit/s) which DumbVideoEncoder reads as kbit/s
    # (EncodeFrame: bitrate * 1000 / 8 / fps bytes): 0.85 x 1000 / 1024 of the estimate
    # (encoder_share, docs/scenario-format.md).
    "encoder_share": 0.85 * 1000.0 / 1024.0,
    "unpaced_factor": 1e6,
    # Copa: the artifact's own (src/internet/model/tcp-copa.cc, from ccp_copa; lowlat's
    # cc_params.copa.variant = "artifact"), DefaultLatencyfactor = copaDeltaHundred / 100
    # (fec-emulate.cc main): 50 -> delta 0.5 for copa-fifo/-codel/-fifortc/-wirtc, which give no
    # --copadelta; Copa+FastAck is copa-fast2 (real-exp/tcp-summarize.awk prints "copa-fast2"),
    # run with --copadelta=2 -> delta 0.02 (tcp-exp-trace.conf, tcp-static-exp.conf).
    "copa_delta": 0.5,
    "copa_fastack_delta": 0.02,
    # Its TCP receiver acknowledges every segment (fec-emulate.cc main:
    # Config::SetDefault ("ns3::TcpSocket::DelAckCount", UintegerValue (1))): the Copa flows'
    # ack_every = 1, so no RTT sample carries a delayed-ACK wait.
    "copa_ack_every": 1,
    # Its TCP under the artifact's Copa (lowlat's flow key recovery = "tcp", the opt-in TCP loss
    # recovery of lowlat_transport::sender; ns-3.34 src/internet/model/tcp-socket-base.cc and
    # tcp-tx-buffer.cc with SACK, ns-3's default): loss found by 3 later segments only, a lost
    # retransmission only by the retransmission timeout, the window left to Copa in recovery
    # (HasCongControl), and on a timeout every segment in flight lost and the window one segment
    # (ReTxTimeout). The timeout is at least 1 s (TcpSocketBase MinRto, not set by fec-emulate.cc)
    # and is not doubled (ns-diff.patch comments out ReTxTimeout's "doubledRto").
    "copa_recovery": "tcp",
    "copa_min_rto": "1 s",
    "copa_rto_backoff": False,
    # 1448 B segments (fec-emulate.cc: ns3::TcpSocket::SegmentSize 1448) with their TCP and IPv4
    # headers (20 + 20 B: Timestamp false, so no option on a data segment); the point-to-point
    # device's 2 B PPP header is not counted (nor is it for the GCC flows' packets).
    "copa_packet_size": "1488 B",
    # GCC: the artifact's own port (src/bitrate-ctrl/model/congestion-control/gcc-controller.cc,
    # sender-based-controller.cc, and its grouping in packet-sender-udp.cc OnSocketRecv_sender;
    # lowlat's cc_params.gcc.variant = "artifact", GccConfig::artifact lists each rule with its
    # source). Its group_max_span, 20 frame intervals (20 * m_interval ms), is 800 ms at this fps.
    "gcc": "artifact",
    # ABW drop, (run seconds, drop from, drop to): GCC's runs (gcc-static-exp.conf: --duration=200,
    # static-exp/traces/k*-3600..4400, ktrace_gen_all.sh) and Copa's (tcp-static-exp.conf:
    # --duration=72, static-exp/testtraces/k*-500..1300, static-exp/ktrace_gen_all.sh); the cut
    # lines at 40 ms a line.
    "abw_runs": {"gcc": (200.0, 144.0, 176.0), "copa": (72.0, 20.0, 52.0)},
    # Zhuge's ACK holding delays a copy (bottleneck.zhuge.ack_copy): network-queue-zhuge.cc's
    # OnRecv_snddev is a promiscuous receive callback that sends the held copy with SendPkt, and
    # ns-3.34's PointToPointNetDevice::Receive forwards the original after calling it, so the ACK
    # the Copa sender acts on passes at once (the copy acknowledges nothing new).
    # scenario(..., zhuge_ack_copy=False) holds the ACK itself, as the paper describes.
    "zhuge_ack_copy": True,
    # Zhuge's in-band reports (bottleneck.zhuge.in_band): network-queue-zhuge.cc samples the first
    # data packet arriving while no sample waits and Sendback reports it alone 1 ms later, with
    # the queue as it is then minus what arrived after it ("sampled"). The artifact's GCC counts
    # every packet sent between two reported ones into its receive rate, so one report a
    # millisecond carries the whole rate; "per-packet" reports every packet's prediction.
    "zhuge_in_band": "sampled",
}
#: Zhuge's in-band report schedules (``bottleneck.zhuge.in_band``).
IN_BAND = ("sampled", "per-packet")
WIRED_ONE_WAY_MS = CONDITIONS["access_ms"]
HOP_MS = CONDITIONS["last_hop_ms"]


def scenario(
    label: str,
    capacity: dict[str, Any],
    wifi: bool,
    seconds: float,
    seed: int,
    cellular: bool = False,
    gcc_zhuge_queue: str = "codel",
    queue_override: str | None = None,
    copa: str = "paper",
    repair: str = CONDITIONS["repair"],
    paced: bool = CONDITIONS["paced"],
    encoder_share: float = CONDITIONS["encoder_share"],
    gcc: str = CONDITIONS["gcc"],
    zhuge_ack_copy: bool = CONDITIONS["zhuge_ack_copy"],
    zhuge_in_band: str = CONDITIONS["zhuge_in_band"],
) -> dict[str, Any]:
    """The scenario of one run of scheme ``label`` (see :data:`SCHEMES`) under the paper's
    conditions (:data:`CONDITIONS`); ``cellular`` picks CoDel for the "fifo/codel" schemes;
    ``gcc_zhuge_queue`` is GCC+Zhuge's queue ("codel", the artifact's, or "fifo");
    ``queue_override`` ("fifo" or "codel") puts the scheme on that queue whatever its own;
    ``copa`` is the Copa schemes' variant: "paper" (NSDI 2018) or "artifact" (the Zhuge
    artifact's ``tcp-copa.cc``, with its run lists' delta: 0.02 for Copa+FastAck);
    ``repair`` is the GCC flows' loss repair ("timeout", the artifact's, or "nack"); ``paced``
    keeps GCC's pacer (2.5 x its target) where the artifact's sender sends each frame at once;
    ``encoder_share`` is the share of GCC's target its encoder produces (the artifact's 0.85 x
    1000 / 1024; 1: the target); ``zhuge_ack_copy`` holds a copy of each ACK and passes the
    original (the artifact's wiring) where false holds the ACK itself; ``zhuge_in_band`` is the
    AP's in-band report schedule ("sampled", the artifact's, or "per-packet"); ``gcc`` is the GCC schemes'
    GCC: "artifact" (the Zhuge artifact's port, ``cc_params.gcc.variant``) or "libwebrtc"
    (lowlat's default)."""
    c = CONDITIONS
    _, cc, queue, assist = next(s for s in SCHEMES if s[0] == label)
    if label == "GCC+Zhuge":
        queue = gcc_zhuge_queue
    if queue_override is not None:
        queue = queue_override
    if queue == "fifo/codel":
        queue = "codel" if cellular else "fifo"
    bottleneck: dict[str, Any] = {
        **capacity,
        "delay": f"{HOP_MS} ms",
        "queue": bottleneck_queue(queue, assist, wifi),
        "assist": assist,
    }
    if wifi:
        bottleneck["wifi"] = {}
    if zhuge_in_band not in IN_BAND:
        raise ValueError(f"zhuge_in_band: got {zhuge_in_band!r}, expected one of {', '.join(IN_BAND)}")
    if assist == "zhuge":
        bottleneck["zhuge"] = {"in_band": zhuge_in_band, **({"ack_copy": True} if zhuge_ack_copy else {})}
    return {
        "name": f"zhuge-{label}",
        "duration": f"{seconds} s",
        "seed": seed,
        "bottleneck": bottleneck,
        "reverse": {"rate": c["uplink"], "delay": f"{HOP_MS} ms"},
        "flows": [
            {
                "id": "video",
                "kind": "rtp-video",
                "cc": cc,
                "fps": c["fps"],
                "rmin": c["rmin"],
                "rmax": c["rmax"],
                "packet_size": c["packet_size"],
                "access": {"delay": f"{WIRED_ONE_WAY_MS} ms", **({} if paced or cc != "gcc" else {"rate": c["access_rate"]})},
                **({"repair": repair, "encoder_share": encoder_share} if cc == "gcc" else {}),
                **({"cc_params": {"gcc": gcc_params(gcc, paced)}} if cc == "gcc" else {}),
                **({"cc_params": {"copa": copa_params(label, copa)}, "ack_every": c["copa_ack_every"]} if cc == "copa" else {}),
                **(copa_transport() if cc == "copa" and copa == "artifact" else {}),
            }
        ],
    }


def bottleneck_queue(queue: str, assist: str, wifi: bool = False) -> dict[str, Any]:
    """The bottleneck's queue as the artifact's router has it (:data:`CONDITIONS`): the qdisc
    (``queue``: "codel" = ``FqCoDel``, "fifo" = ``PfifoFast``) in front of the point-to-point
    device's FIFO, whose size the middlebox (``assist``) may have changed: 1 packet under Zhuge,
    1000 under FastAck, ns-3's 100 otherwise. A FIFO in front of a device FIFO is one FIFO of both
    limits (flow control keeps the qdisc empty while the device has room, and both keep arrival
    order), so the FIFO is written as one drop-tail queue. With ``wifi`` (``--wifi-ap``) the device
    FIFO is the AP's MAC queue, 100 packets whatever the middlebox (``fec-emulate.cc``:
    ``WifiMacQueue::MaxSize`` ``"100p"``; the middleboxes resize only a point-to-point device's
    queue; the artifact's Zhuge makes that MAC queue drop its oldest packet, not modelled)."""
    c = CONDITIONS
    device = c["device_packets"]
    if not wifi:
        resized = {"zhuge": c["zhuge_device_packets"], "fastack": c["fastack_device_packets"]}
        device = resized.get(assist, device)
    if queue == "codel":
        # With a single video flow FqCoDel is CoDel on that flow's queue (target 5 ms, interval
        # 100 ms, ns-3's defaults; ECN unused: the flows here are not ECN-capable). FqCoDel drops
        # from the head of the fattest flow once over its 10 240 packets; here the tail (not
        # modelled: a limit of seconds at these rates).
        return {
            "kind": "codel",
            "limit": _packets(c["codel_packets"]),
            "device_limit": _packets(device),
        }
    return {"kind": "droptail", "limit": _packets(c["pfifo_packets"] + device)}


def _packets(n: int) -> str:
    return f"{n} packet" if n == 1 else f"{n} packets"


def gcc_params(gcc: str, paced: bool = CONDITIONS["paced"]) -> dict[str, Any]:
    """``cc_params.gcc`` of a GCC scheme: the variant ("artifact" or "libwebrtc") and, unpaced,
    the pacing factor."""
    if gcc not in ("artifact", "libwebrtc"):
        raise ValueError(f"gcc: got {gcc!r}, expected 'artifact' or 'libwebrtc'")
    return {"variant": gcc, **({} if paced else {"pacing_factor": CONDITIONS["unpaced_factor"]})}


def copa_transport() -> dict[str, Any]:
    """The flow keys of the artifact's TCP under its Copa (:data:`CONDITIONS`): ns-3's loss
    recovery with a 1 s minimum timeout that is never doubled, and 1448 B segments."""
    c = CONDITIONS
    return {
        "recovery": c["copa_recovery"],
        "min_rto": c["copa_min_rto"],
        "rto_backoff": c["copa_rto_backoff"],
        "packet_size": c["copa_packet_size"],
    }


def copa_params(label: str, copa: str) -> dict[str, Any]:
    """``cc_params.copa`` of a Copa scheme: the variant, and under the artifact's its run lists'
    delta (see :data:`CONDITIONS`)."""
    if copa not in ("paper", "artifact"):
        raise ValueError(f"copa: got {copa!r}, expected 'paper' or 'artifact'")
    if copa == "paper":
        return {"variant": "paper"}
    delta = CONDITIONS["copa_fastack_delta"] if label == "Copa+FastAck" else CONDITIONS["copa_delta"]
    return {"variant": "artifact", "delta": delta}


def abw_run(scheme: str) -> tuple[float, float, float]:
    """An ABW-drop run of ``scheme``: (seconds, earliest drop, latest drop), the artifact's for
    its controller (:data:`CONDITIONS` ``abw_runs``)."""
    _, cc, _, _ = next(s for s in SCHEMES if s[0] == scheme)
    runs: dict[str, tuple[float, float, float]] = CONDITIONS["abw_runs"]
    return runs[cc]


#: The window after an ABW drop that its statistics read (seconds), and how long a drop run goes
#: on past it: every figure of a drop run (:func:`durations_after`, :func:`srtt_episode_s`) reads
#: the 20 s after the drop (the flow series binned by arrival, the sender's RTT samples by ACK)
#: and nothing after, so the run stops a second past that window instead of at the artifact's
#: run end (GCC 200 s, Copa 72 s): the simulation up to any instant is the same whenever it
#: ends, and so is every figure (the last 200 ms bin in the window is complete).
DROP_WINDOW_S = 20.0
DROP_RUN_MARGIN_S = 1.0


def drop_run_seconds(spec: "DropRun") -> float:
    """How long an ABW-drop run is simulated: the artifact's run length, or the end of the window
    its statistics read plus a margin when that comes first (see :data:`DROP_WINDOW_S`)."""
    seconds, _, _ = abw_run(spec.scheme)
    return min(seconds, spec.drop_s + DROP_WINDOW_S + DROP_RUN_MARGIN_S)


def drop_instant(scheme: str, u: float) -> float:
    """The drop instant of ``scheme`` for a draw ``u`` in GCC's range (144-176 s): the same place
    in the scheme's own range (Copa: 20-52 s), so GCC's instants stay those of earlier runs."""
    _, lo, _ = abw_run(scheme)
    _, glo, _ = abw_run("GCC+FIFO")
    return round(round(u, 1) - glo + lo, 1)


def trace_capacity(path: str, trace_format: str) -> dict[str, Any]:
    """The bottleneck keys of a trace replayed as the artifact does (200 ms a line, x 15/13)."""
    cap: dict[str, Any] = {"trace": path, "trace_format": trace_format}
    if trace_format != "mahimahi" and sniff_format(Path(path)) != "mahimahi":
        cap.update(trace_step=f"{CONDITIONS['trace_step_ms']} ms", trace_scale=CONDITIONS["trace_scale"], trace_loop=False)
    return cap


def sniff_format(path: Path) -> str:
    """``"mahimahi"`` if the first data line of ``path`` is one whole number, else ``"rate"``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                t = line.strip()
                if t and not t.startswith("#"):
                    return "mahimahi" if t.isdigit() else "rate"
    except OSError:
        pass
    return "rate"


def run_seconds(path: Path, trace_format: str, seconds: float) -> float:
    """How long a trace runs: ``seconds``, cut to lines x 200 ms for a rate trace (the artifact
    stops at the trace's end); a mahimahi trace loops."""
    fmt = sniff_format(path) if trace_format == "auto" else trace_format
    if fmt == "mahimahi":
        return seconds
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = sum(1 for line in f if line.strip() and not line.lstrip().startswith("#"))
    except OSError:
        return seconds
    return float(max(min(seconds, lines * CONDITIONS["trace_step_ms"] / 1000.0), 1.0))


@dataclass(frozen=True)
class TraceRun:
    """One scheme over one trace."""

    family: str
    trace: str
    scheme: str
    seconds: float
    seed: int
    trace_format: str = "auto"
    wifi_ap: bool = False
    gcc_zhuge_queue: str = "codel"
    #: The Copa schemes' variant ("artifact" or "paper").
    copa: str = "artifact"
    repair: str = CONDITIONS["repair"]
    paced: bool = CONDITIONS["paced"]
    #: The GCC schemes' GCC ("artifact" or "libwebrtc").
    gcc: str = CONDITIONS["gcc"]
    #: Zhuge's in-band report schedule ("sampled" or "per-packet").
    in_band: str = CONDITIONS["zhuge_in_band"]


@dataclass(frozen=True)
class DropRun:
    """One scheme in the ABW-drop experiment."""

    k: int
    scheme: str
    drop_s: float
    seed: int
    #: The bottleneck queue: "own" (the scheme's, as in :func:`scenario` with ``cellular``),
    #: "fifo" or "codel" (the artifact scores each scheme by the better of the two).
    queue: str = "own"
    #: The Copa schemes' variant ("artifact" or "paper").
    copa: str = "artifact"
    repair: str = CONDITIONS["repair"]
    paced: bool = CONDITIONS["paced"]
    #: The GCC schemes' GCC ("artifact" or "libwebrtc").
    gcc: str = CONDITIONS["gcc"]
    #: Zhuge's in-band report schedule ("sampled" or "per-packet").
    in_band: str = CONDITIONS["zhuge_in_band"]


@dataclass(frozen=True)
class DropGroup:
    """The ABW-drop runs that are one run until their drop: one scheme on one queue with one
    seed, at each ``(k, drop_s)`` of ``drops`` (see :func:`run_drop_group`)."""

    scheme: str
    seed: int
    queue: str
    drops: list[tuple[int, float]]
    copa: str = "artifact"
    repair: str = CONDITIONS["repair"]
    paced: bool = CONDITIONS["paced"]
    gcc: str = CONDITIONS["gcc"]
    in_band: str = CONDITIONS["zhuge_in_band"]

    def runs(self) -> list[DropRun]:
        """Its runs, in the order of ``drops``."""
        return [DropRun(int(k), self.scheme, float(d), self.seed, self.queue, self.copa, self.repair, self.paced, self.gcc, self.in_band) for k, d in self.drops]


def _mean_mbps(path: str, trace_format: str) -> float:
    """A trace's mean rate in Mbit/s as the runs replay it (for the start order only: an
    unreadable trace counts as 1 Mbit/s; its run fails fast anyway). Read once per version of the
    file (a trace's six runs each read it, a second before the first run started)."""
    try:
        st = os.stat(path)
    except OSError:
        return 1.0
    return _mean_mbps_of(path, trace_format, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=1024)
def _mean_mbps_of(path: str, trace_format: str, _mtime_ns: int, _size: int) -> float:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [t for t in (line.strip() for line in f) if t and not t.startswith("#")]
        if (sniff_format(Path(path)) if trace_format == "auto" else trace_format) == "mahimahi":
            # One 1500 B delivery opportunity per line, the last line the trace's length in ms.
            return len(lines) * 12.0 / max(float(lines[-1]), 1.0)
        rates = [float(t.split()[1]) for t in lines]
        return float(sum(rates) / len(rates) * CONDITIONS["trace_scale"])
    except (OSError, ValueError, IndexError, ZeroDivisionError):
        return 1.0


#: Relative CPU per packet of the video schemes (Copa's per-ACK transport costs more than GCC's
#: RTP): only for the start order.
_COPA_COST = 1.5


def trace_cost(spec: TraceRun) -> float:
    """A trace run's expected cost for the start order of the grid (:func:`common.run_grid`):
    simulated seconds x the trace's mean rate, at most the video's maximum."""
    rmax = float(CONDITIONS["rmax"].split()[0])
    rate = min(_mean_mbps(spec.trace, spec.trace_format), rmax) + 0.5
    return spec.seconds * rate * (_COPA_COST if spec.scheme.startswith("Copa") else 1.0)


def drop_group_cost(group: DropGroup) -> float:
    """A group's expected cost: its shared run up to the last drop, then each run's own part."""
    runs = group.runs()
    top = float(CONDITIONS["abw_mbps"] * CONDITIONS["trace_scale"])
    shared = max((r.drop_s for r in runs), default=0.0) * top
    own = sum((drop_run_seconds(r) - r.drop_s) * top / r.k for r in runs)
    return (shared + own) * (_COPA_COST if group.scheme.startswith("Copa") else 1.0)


def drop_cost(spec: DropRun) -> float:
    """An ABW-drop run's expected cost for the start order: packets before and after the drop."""
    top = float(CONDITIONS["abw_mbps"] * CONDITIONS["trace_scale"])
    packets = spec.drop_s * top + (drop_run_seconds(spec) - spec.drop_s) * top / spec.k
    return packets * (_COPA_COST if spec.scheme.startswith("Copa") else 1.0)


#: The artifact's decoder deadline in frames: a frame still incomplete when a packet of a frame
#: this many frames newer arrives is given up (``VideoDecoder::DecodeDataPacket``: ``delay_ddl /
#: m_frameInterval`` = 1000 ms / 40 ms with ``--ddl=1000 --fps=25``).
DISCARD_FRAMES = 25


def in_order_frame_delays(frames: pd.DataFrame, discard_frames: int = DISCARD_FRAMES) -> pd.DataFrame:
    """The artifact's frame accounting (``VideoDecoder::DecodeDataPacket``, ``app_delay.awk``)
    replayed on one flow's :attr:`lowlat.Result.frames` (``frame`` 0, 1, ... in order,
    ``capture_s``, ``complete_s``, ``newest_s``), event by event as the decoder sees them.

    - A packet of a frame not yet played first gives up every frame from the last played one + 1
      to its own id - ``discard_frames`` (a "discard frame" line), each followed by the complete
      frames right after it (decoded at once); the last played id becomes the last frame given
      up, even when frames after it were just decoded (the artifact's step back: those frames are
      given up again, one per newer frame that arrives, and ``app_delay.awk`` keeps the later
      line). Only the first packet of a frame newer than every earlier one can give anything up
      (``newest_s``): a later packet of any frame reaches no further.
    - A frame completes when its last missing packet arrives (``complete_s``); frame 0 is
      decoded then, any other frame only if it follows the last played one, together with the
      complete frames right after it; otherwise it waits.
    - A frame's delay is the instant of its last line minus its capture (a given-up frame is
      therefore late); a frame with no line by the end of the run is not counted.

    Returns the frames that left: ``frame``, ``delay_ms``, ``decoded`` (False: its last line is a
    "discard frame": given up, or given up again after the step back)."""

    ids, delay_ms, decoded = frame_exits(FrameColumns.of(frames), discard_frames)
    return pd.DataFrame({"frame": ids, "delay_ms": delay_ms, "decoded": decoded})


@dataclass(frozen=True)
class FrameColumns:
    """One flow's frames (:attr:`lowlat.Result.frames`) as arrays in frame order: what
    :func:`frame_exits` and :func:`late_causes` read (a DataFrame per run cost a reproduction run
    more than the replay itself)."""

    frame: Any
    capture_s: Any
    complete_s: Any
    newest_s: Any

    @staticmethod
    def of(frames: pd.DataFrame) -> "FrameColumns":
        """From a frames DataFrame of one flow."""
        f = frames.sort_values("frame")
        return FrameColumns(
            f["frame"].to_numpy(),
            f["capture_s"].to_numpy(dtype=float),
            f["complete_s"].to_numpy(dtype=float, na_value=np.nan),
            f["newest_s"].to_numpy(dtype=float, na_value=np.nan),
        )

    @staticmethod
    def of_flow(r: Any, flow: str) -> "FrameColumns":
        """Flow ``flow``'s frames of run results ``r``, read from the table's columns."""
        mine = r.label_is("frames", "flow", flow)
        frame, cap, complete, newest = (c[mine] for c in r.columns("frames", "frame", "capture_s", "complete_s", "newest_s"))
        order = np.argsort(frame, kind="stable")
        return FrameColumns(frame[order], cap[order].astype(float), complete[order].astype(float), newest[order].astype(float))


def frame_exits(fc: FrameColumns, discard_frames: int = DISCARD_FRAMES) -> tuple[Any, Any, Any]:
    """:func:`in_order_frame_delays` on arrays: the frames that left, their delays (ms) and whether
    each was decoded. The replay steps event by event: in Rust (``lowlat_media::decoder_replay``)."""
    leaves, decoded = _native.decoder_replay(fc.complete_s.tolist(), fc.newest_s.tolist(), discard_frames)
    left = np.array(leaves, dtype=float)
    ok = np.isfinite(left)
    return fc.frame[ok], (left[ok] - fc.capture_s[ok]) * 1000.0, np.array(decoded, dtype=bool)[ok]


#: The causes :func:`late_frame_causes` tells apart.
LATE_CAUSES = ("given_up", "repaired", "waited", "queued")


def late_frame_causes(frames: pd.DataFrame, counted: pd.DataFrame, threshold_ms: float = 400.0) -> dict[str, int]:
    """Why the frames :func:`in_order_frame_delays` counts late (``delay_ms`` at least
    ``threshold_ms``, as the artifact's ``summary_stat.sh``: ``$1 >= fd``) were late, one cause
    each (:data:`LATE_CAUSES`):

    - ``given_up``: it left the decoder by a "discard frame" (incomplete 25 frames later);
    - ``repaired``: decoded, but complete only after the first packet of a later frame had
      arrived: it lost a packet (the path keeps a frame's packets ahead of the next frame's) and
      waited for the retransmission;
    - ``waited``: complete in time with no loss, but held by in-order decoding behind an earlier
      frame (repaired or given up);
    - ``queued``: no loss, but its own last packet arrived ``threshold_ms`` or more after capture
      (queueing at the sender or the bottleneck, outages included)."""
    c = counted
    return late_causes(FrameColumns.of(frames), c["frame"].to_numpy(), c["delay_ms"].to_numpy(dtype=float), c["decoded"].to_numpy(dtype=bool), threshold_ms)


def late_causes(fc: FrameColumns, frame: Any, delay_ms: Any, decoded: Any, threshold_ms: float = 400.0) -> dict[str, int]:
    """:func:`late_frame_causes` on arrays (the frames and :func:`frame_exits`' answer)."""
    newest = np.where(np.isnan(fc.newest_s), np.inf, fc.newest_s)
    # The first arrival of any later frame (the earliest newest_s after each one).
    later = np.append(np.minimum.accumulate(newest[::-1])[::-1][1:], np.inf) if len(newest) else newest
    own_ms = (fc.complete_s - fc.capture_s) * 1000.0
    lossy = np.isnan(fc.complete_s) | (fc.complete_s > later)
    late = delay_ms >= threshold_ms
    # Each late frame's row among the frames (ids in order, each once).
    at = np.searchsorted(fc.frame, frame[late])
    dec, lo, own = decoded[late], lossy[at], own_ms[at]
    return {
        "given_up": int((~dec).sum()),
        "repaired": int((dec & lo).sum()),
        "waited": int((dec & ~lo & (own < threshold_ms)).sum()),
        "queued": int((dec & ~lo & (own >= threshold_ms)).sum()),
    }


#: The gain of the artifact's senders' smoothed RTT: its TCP sender's (Copa) is ns-3's
#: ``RttMeanDeviation`` (``Alpha`` 0.125, the ``RttNet`` estimate ``output-stat.awk`` reads); its
#: UDP sender's (GCC) is ``PacketSenderUdp::UpdateRTT``'s ``0.2 * rtt + 0.8 * srtt``.
SRTT_GAIN = {"copa": 1.0 / 8.0, "gcc": 0.2}


def smoothed_rtt(samples: pd.DataFrame, gain: float = SRTT_GAIN["copa"]) -> pd.DataFrame:
    """The sender's smoothed RTT (``t_s``, ``srtt_ms``) from its samples (``t_s``, ``rtt_ms``):
    an exponential mean of ``gain`` started at the first sample, as the artifact's senders keep
    it (:data:`SRTT_GAIN`)."""
    t, srtt = _smoothed(samples["t_s"].to_numpy(), samples["rtt_ms"].to_numpy(), gain)
    return pd.DataFrame({"t_s": t, "srtt_ms": srtt})


def _in_time_order(t: Any) -> bool:
    return len(t) < 2 or bool(np.all(t[1:] >= t[:-1]))


def _smoothed(t: Any, rtt_ms: Any, gain: float, ordered: bool = False) -> tuple[Any, Any]:
    """:func:`smoothed_rtt` on arrays: the instants in time order (a stable sort; samples
    already in order, as a sender records them, are taken as they are) and the mean."""
    if not (ordered or _in_time_order(t)):
        order = np.argsort(t, kind="stable")
        t, rtt_ms = t[order], rtt_ms[order]
    return t, pd.Series(rtt_ms).ewm(alpha=gain, adjust=False).mean().to_numpy()


def first_episode_s(t_s: Any, rtt_ms: Any, drop_s: float, window_s: float = 20.0, threshold_ms: float = 200.0) -> float:
    """The artifact's ABW-drop statistic (``static-exp/output-stat.awk``): over the samples in
    ``[drop_s, drop_s + window_s)``, one per instant (later samples at the same instant
    skipped), the time from the first above ``threshold_ms`` to the first after it below; 0 if
    none is above, ``window_s`` if it never comes back below."""
    start = None
    last = None
    for t, r in zip(t_s, rtt_ms):
        if t == last:
            continue
        last = t
        if not drop_s <= t < drop_s + window_s:
            continue
        if start is None and r > threshold_ms:
            start = t
        elif start is not None and r < threshold_ms:
            return float(t - start)
    return 0.0 if start is None else window_s


def srtt_episode_s(srtt: pd.DataFrame, drop_s: float, window_s: float = 20.0) -> float:
    """:func:`first_episode_s` of a smoothed RTT (:func:`smoothed_rtt`, sorted by time) after
    ``drop_s``, stepping only through the samples in the window (Copa has one per ACK: a Python
    step for each sample of a 200 s run cost more than the statistic needs). The same value:
    a sample before the window has an earlier instant, so the first one in it is never skipped
    as a repeat."""
    return _episode_in_window(srtt["t_s"].to_numpy(), srtt["srtt_ms"].to_numpy(), drop_s, window_s)


def _episode_in_window(t: Any, srtt_ms: Any, drop_s: float, window_s: float) -> float:
    lo, hi = t.searchsorted(drop_s, "left"), t.searchsorted(drop_s + window_s, "left")
    return first_episode_s(t[lo:hi].tolist(), srtt_ms[lo:hi].tolist(), drop_s, window_s)


def video_srtt_episode_s(r: Any, gain: float, drop_s: float, window_s: float = 20.0) -> float:
    """:func:`srtt_episode_s` of the video flow's smoothed RTT (:func:`smoothed_rtt` of its
    sender's samples), read from the ``sender_rtt`` columns: the same steps on the same values
    without a DataFrame of every sample."""
    video = r.label_is("sender_rtt", "flow", "video")
    t, rtt = r.columns("sender_rtt", "t_s", "rtt_ms")
    if not video.all():
        t, rtt = t[video], rtt[video]
    ordered = _in_time_order(t)
    if ordered:
        # The mean is causal: the samples from the window's end on change none of its values
        # before (a drop run goes on a second past its window).
        end = int(t.searchsorted(drop_s + window_s, "left"))
        t, rtt = t[:end], rtt[:end]
    return _episode_in_window(*_smoothed(t, rtt, gain, ordered), drop_s, window_s)


def _flow_metrics(summary: dict[str, Any]) -> dict[str, float]:
    f = summary["flows"][0]
    return {
        "ratio_rtt_over_200ms": f["ratio_net_rtt_over_200ms"],
        "ratio_frame_delay_over_400ms": f.get("ratio_frame_delay_over_400ms", float("nan")),
        "ratio_fps_below_10": f.get("ratio_fps_below_10", float("nan")),
        "rtt_p99_ms": f["net_rtt_ms"]["p99"],
        "frame_delay_p99_ms": (f.get("frame_delay_ms") or {}).get("p99"),
        "throughput_kbps": f["throughput_kbps"],
    }


#: Predictions kept per GCC+Zhuge run for the accuracy figure: a uniform random sample, drawn as
#: they come (``lowlat.run(..., prediction_sample=)``; a 300 s run makes up to 1.7 million).
PREDICTION_SAMPLE = 20_000


def run_trace(spec: TraceRun) -> dict[str, Any]:
    """One trace run; never raises (a failure is the row's ``error``). Returns the row and, for
    GCC+Zhuge runs, the predictions (a sample of at most :data:`PREDICTION_SAMPLE`)."""
    from ..api import run

    row: dict[str, Any] = asdict(spec)
    row["predictions"] = None
    t0 = time.perf_counter()
    try:
        cap = trace_capacity(spec.trace, spec.trace_format)
        wifi = spec.wifi_ap and spec.family.startswith("W")
        sc = scenario(
            spec.scheme, cap, wifi, spec.seconds, spec.seed, spec.family.startswith("C"), spec.gcc_zhuge_queue, copa=spec.copa, repair=spec.repair, paced=spec.paced, gcc=spec.gcc, zhuge_in_band=spec.in_band
        )
        # Only the per-sample table it reads (a Copa+Zhuge run has a prediction per packet), and
        # no link statistics (nothing here reads them).
        zhuge = spec.scheme == "GCC+Zhuge"
        r = run(sc, progress=False, tables=["predictions"] if zhuge else [], link_stats=False, prediction_sample=PREDICTION_SAMPLE if zhuge else None)
        row.update(_flow_metrics(r.summary))
        video = FrameColumns.of_flow(r, "video")
        frame, delay_ms, decoded = frame_exits(video)
        row["frames_counted_artifact"] = len(frame)
        # summary_stat.sh counts a frame delay of 400 ms or more (``$1 >= fd``).
        row["frames_late_artifact"] = int((delay_ms >= 400.0).sum())
        row.update({f"frames_late_{k}": v for k, v in late_causes(video, frame, delay_ms, decoded).items()})
        row["frame_late_ratio_artifact"] = row["frames_late_artifact"] / len(frame) if len(frame) else float("nan")
        row["warnings"] = "; ".join(r.summary.get("warnings", []))
        if spec.scheme == "GCC+Zhuge":
            predicted, actual = r.columns("predictions", "predicted_ms", "actual_ms")
            row["predictions"] = pd.DataFrame({"predicted_ms": predicted, "actual_ms": actual}) if len(predicted) else None
        row["error"] = ""
    except BaseException as e:  # noqa: BLE001 - any failure is recorded, the sweep goes on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        row.update({m: float("nan") for m in METRICS})
        row.update(frames_counted_artifact=0, frames_late_artifact=0, **{f"frames_late_{k}": 0 for k in LATE_CAUSES})
        row["error"] = f"{type(e).__name__}: {e}"
    row["wall_s"] = time.perf_counter() - t0
    return row


def durations_after(r: Any, drop_s: float, window_s: float = 20.0) -> dict[str, float]:
    """Seconds, in ``window_s`` after the drop, of RTT > 200 ms and frame delay > 400 ms (200 ms
    bins), and of fps < 10 (1 s bins). Read from the flow series' columns (a DataFrame per drop
    run cost more than the run's last 20 s of simulation)."""
    video = r.label_is("flow_series", "flow", "video")
    t, owd, delay, frames = (c[video] for c in r.columns("flow_series", "t_s", "owd_ms", "frame_delay_ms", "frames"))
    inside = (t >= drop_s - 1e-9) & (t < drop_s + window_s - 1e-9)
    t, owd, delay, frames = t[inside], owd[inside], delay[inside], frames[inside]
    reverse_ms = WIRED_ONE_WAY_MS + HOP_MS
    bin_s = float(np.diff(t).min()) if len(t) > 1 else 0.2
    rtt = int(np.count_nonzero(owd + reverse_ms > 200)) * bin_s
    frame = int(np.count_nonzero(delay > 400)) * bin_s
    # Frames per whole second after the drop (a second with no bin has no count).
    _, second = np.unique(((t - drop_s) // 1.0).astype(int), return_inverse=True)
    per_s = np.bincount(second, weights=np.nan_to_num(frames.astype(float))) if len(t) else np.zeros(0)
    return {"rtt_over_200ms_s": rtt, "frame_delay_over_400ms_s": frame, "fps_below_10_s": float(np.count_nonzero(per_s < 10))}


def own_drop_queue(scheme: str) -> str:
    """The queue a scheme runs on in the ABW drop (:func:`scenario` with ``cellular``)."""
    _, _, queue, _ = next(s for s in SCHEMES if s[0] == scheme)
    return "fifo" if queue == "fifo" else "codel"


#: The ABW-drop columns: the time above the thresholds in the 20 s after the drop (network RTT,
#: 200 ms bins), and the artifact's first-episode statistic on the sender's smoothed RTT.
DROP_COLUMNS = ["rtt_over_200ms_s", "frame_delay_over_400ms_s", "fps_below_10_s", "srtt_episode_s"]


def drop_scenario(spec: DropRun, seconds: float | None = None, dropped: bool = True) -> dict[str, Any]:
    """The scenario of ABW-drop run ``spec``, ``seconds`` long (default
    :func:`drop_run_seconds`); without ``dropped``, the rate never drops (the run its group
    shares)."""
    top = CONDITIONS["abw_mbps"] * CONDITIONS["trace_scale"]
    steps = [{"at": "0 s", "rate": f"{top:.6g} Mbit/s"}]
    if dropped:
        steps.append({"at": f"{spec.drop_s} s", "rate": f"{top / spec.k:.6g} Mbit/s"})
    queue = None if spec.queue == "own" else spec.queue
    return scenario(
        spec.scheme, {"schedule": steps}, False, drop_run_seconds(spec) if seconds is None else seconds, spec.seed, cellular=True, queue_override=queue, copa=spec.copa, repair=spec.repair, paced=spec.paced, gcc=spec.gcc, zhuge_in_band=spec.in_band
    )


def drop_figures(spec: DropRun, r: Any) -> dict[str, float]:
    """The ABW-drop columns (:data:`DROP_COLUMNS`) of run ``spec``'s results ``r``."""
    row = durations_after(r, spec.drop_s, DROP_WINDOW_S)
    _, cc, _, _ = next(s for s in SCHEMES if s[0] == spec.scheme)
    row["srtt_episode_s"] = video_srtt_episode_s(r, SRTT_GAIN[cc], spec.drop_s, DROP_WINDOW_S)
    return row


def _drop_row(spec: DropRun, figures: dict[str, float] | BaseException) -> dict[str, Any]:
    row: dict[str, Any] = asdict(spec)
    if isinstance(figures, BaseException):
        row.update({c: float("nan") for c in DROP_COLUMNS})
        row["error"] = f"{type(figures).__name__}: {figures}"
    else:
        row.update(figures)
        row["error"] = ""
    return row


def run_drop(spec: DropRun) -> dict[str, Any]:
    """One ABW-drop run; never raises."""
    from ..api import run

    try:
        r = run(drop_scenario(spec), progress=False, tables=["sender_rtt"], link_stats=False)
        return _drop_row(spec, drop_figures(spec, r))
    except Exception as e:  # noqa: BLE001 - any failure is recorded, the sweep goes on
        return _drop_row(spec, e)


def run_drop_group(group: DropGroup) -> dict[str, Any]:
    """A group's ABW-drop runs (:class:`DropGroup`), never raising: their rows, under ``rows``.
    The runs are the same until their drop, so they share one run (:func:`lowlat.api.run_branches`:
    each goes on from a copy of it a second before its drop). Each is the artifact's full run
    stopped a second past the window its figures read (:func:`drop_run_seconds`), so its row is
    that of :func:`run_drop`, bit for bit."""
    from ..api import run_branches

    runs = group.runs()
    seconds, _, _ = abw_run(group.scheme)
    base = drop_scenario(runs[0], seconds, dropped=False) if runs else {}
    branches = [(drop_scenario(r, seconds), drop_run_seconds(r)) for r in runs]
    got = (
        run_branches(base, branches, lambda i, res: drop_figures(runs[i], res), tables=["sender_rtt"], link_stats=False)
        if runs
        else []
    )
    rows = [_drop_row(r, g) for r, g in zip(runs, got)]
    return {"rows": pd.DataFrame(rows), "error": ""}


def run_drops(out: Path, specs: list[DropRun], runner: Runner) -> pd.DataFrame:
    """The rows of ABW-drop runs ``specs``, in their order, run in groups that share their run
    up to the drop (:func:`run_drop_group`; kept in ``out/sweeps/abw-drop``, resumed per group).
    A group that fails gives each of its runs its error."""
    keys: dict[tuple[Any, ...], list[DropRun]] = {}
    for sp in specs:
        keys.setdefault((sp.scheme, sp.seed, sp.queue, sp.copa, sp.repair, sp.paced, sp.gcc, sp.in_band), []).append(sp)
    groups = [
        DropGroup(sc, sd, q, [(r.k, r.drop_s) for r in sorted(rs, key=lambda r: (r.drop_s, r.k))], *variant)
        for (sc, sd, q, *variant), rs in keys.items()
    ]
    gdf, data = run_grid(out, "abw-drop", run_drop_group, groups, runner, "abw drop", data=["rows"], cost=drop_group_cost)
    found: dict[DropRun, dict[str, Any]] = {}
    for g, err, rows in zip(groups, gdf["error"], data["rows"]):
        for r, got in zip(g.runs(), rows.to_dict("records") if rows is not None else [None] * len(g.drops)):
            if got is None:
                got = _drop_row(r, RuntimeError(err if isinstance(err, str) and err else "the group gave no rows"))
            # A stored table reads an empty text back as missing.
            got["error"] = got["error"] if isinstance(got["error"], str) else ""
            found[r] = got
    return pd.DataFrame([found[sp] for sp in specs])


#: How the artifact names each ABW scheme once scored by the better of its FIFO and CoDel runs.
ARTIFACT_DROP_NAMES = {"GCC+FIFO": "GCC", "GCC+Zhuge": "GCC+Zhuge", "Copa": "Copa", "Copa+Zhuge": "Copa+Zhuge"}


def drop_tables(drows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ABW-drop tables, per k and scheme: ``(own, artifact)``. ``own``: the mean over the
    seeds of the seconds with network RTT above 200 ms, each scheme on its own queue;
    ``artifact``: the artifact's (``summary-stat.awk``): the first-episode statistic on the
    sender's smoothed RTT, averaged over the seeds per queue, the better (smaller) of FIFO and
    CoDel."""
    ok = drows[drows["error"] == ""]
    schemes = [s for s in ABW_SCHEMES if s in set(ok["scheme"])]
    own = ok[ok["queue"] == ok["scheme"].map(own_drop_queue)]
    t_own = own.pivot_table(index="k", columns="scheme", values="rtt_over_200ms_s", aggfunc="mean")
    t_own = t_own[[s for s in schemes if s in t_own.columns]]
    per_queue = ok.groupby(["k", "scheme", "queue"])["srtt_episode_s"].mean().reset_index()
    best = per_queue.groupby(["k", "scheme"])["srtt_episode_s"].min().unstack("scheme")
    best = best[[s for s in schemes if s in best.columns]].rename(columns=ARTIFACT_DROP_NAMES)
    return t_own, best


def family_tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per family: one row per scheme, the metrics' means over the family's traces."""
    ok = df[df["error"] == ""]
    order = [s[0] for s in SCHEMES]
    tables = {}
    for fam, g in ok.groupby("family", sort=True):
        t = g.groupby("scheme")[METRICS].mean().reindex([s for s in order if s in set(g["scheme"])])
        # The artifact pools every frame of the family's traces (summary_stat.sh over stat.sh's
        # concatenated per-trace logs), where the other ratios are means over the traces.
        pooled = g.groupby("scheme")[["frames_late_artifact", "frames_counted_artifact"]].sum()
        t["frame_late_ratio_artifact"] = pooled["frames_late_artifact"] / pooled["frames_counted_artifact"].where(pooled["frames_counted_artifact"] > 0)
        t.insert(0, "traces", g.groupby("scheme").size())
        tables[fam] = t.reset_index()
    return tables


def reductions(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per family: how much GCC+Zhuge cuts each tail ratio against the best of GCC+FIFO/CoDel,
    and Copa+Zhuge against the best of Copa/Copa+FastAck (positive: Zhuge lower)."""
    rows = []
    for fam, t in tables.items():
        t = t.set_index("scheme")
        for zhuge, bases in (("GCC+Zhuge", ["GCC+FIFO", "GCC+CoDel"]), ("Copa+Zhuge", ["Copa", "Copa+FastAck"])):
            if zhuge not in t.index or not any(b in t.index for b in bases):
                continue
            row: dict[str, Any] = {"family": fam, "scheme": zhuge}
            for m in ("ratio_rtt_over_200ms", "frame_late_ratio_artifact", "ratio_frame_delay_over_400ms", "ratio_fps_below_10", "rtt_p99_ms"):
                best = min(t.loc[b, m] for b in bases if b in t.index)
                row[f"{m}_reduction"] = (best - t.loc[zhuge, m]) / best if best > 0 else float("nan")
            rows.append(row)
    return pd.DataFrame(rows)


def plot_drop(df: pd.DataFrame, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    ok = df[df["error"] == ""]
    ok = ok[ok["queue"] == ok["scheme"].map(own_drop_queue)]  # each scheme on its own queue
    cols = ["rtt_over_200ms_s", "frame_delay_over_400ms_s", "fps_below_10_s"]
    for scheme, g in ok.groupby("scheme", sort=False):
        g = g.groupby("k")[cols].mean().reset_index().sort_values("k")  # mean over the seeds
        for ax, col in zip(axes, cols):
            ax.plot(g["k"], g[col], marker="o", ms=3, label=scheme)
    for ax, title in zip(axes, ["RTT > 200 ms", "frame delay > 400 ms", "fps < 10"]):
        ax.set_xlabel("k (capacity 30 -> 30/k Mbit/s)")
        ax.set_ylabel("seconds in the 20 s after the drop (mean)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def drop_window(spec: DropRun) -> dict[str, Any]:
    """One ABW-drop run's video series from 2 s before the drop to 8 s after (the network RTT and
    the sending and receiving rates per 200 ms bin), as its data ``series``: the runs of
    :func:`drop_timeline`."""
    from ..api import run

    top = CONDITIONS["abw_mbps"] * CONDITIONS["trace_scale"]
    drop = spec.drop_s
    cap = {"schedule": [{"at": "0 s", "rate": f"{top:.6g} Mbit/s"}, {"at": f"{drop} s", "rate": f"{top / spec.k:.6g} Mbit/s"}]}
    seconds, _, _ = abw_run(spec.scheme)
    fs = run(scenario(spec.scheme, cap, False, seconds, spec.seed, cellular=True, copa=spec.copa, repair=spec.repair, paced=spec.paced, gcc=spec.gcc, zhuge_in_band=spec.in_band), progress=False, tables=[]).flow_series
    fs = fs[(fs["flow"] == "video") & (fs["t_s"] >= drop - 2) & (fs["t_s"] < drop + 8)].copy()
    fs["rtt_ms"] = fs["owd_ms"] + WIRED_ONE_WAY_MS + HOP_MS
    return {"series": fs[["t_s", "rtt_ms", "send_kbps", "recv_kbps"]]}


def drop_timeline(
    k: int, seed: int, out: Path, runner: Runner, copa: str = "artifact",
    repair: str = CONDITIONS["repair"], paced: bool = CONDITIONS["paced"], gcc: str = CONDITIONS["gcc"],
    in_band: str = CONDITIONS["zhuge_in_band"],
) -> tuple[float, pd.DataFrame, pd.DataFrame]:
    """One ABW-drop run of each of :data:`ABW_SCHEMES` (factor ``k``, ``seed``'s drop instant),
    as the grid ``abw-drop-timeline`` in ``out``: ``(drop_s, series, rows)`` with the network RTT
    and sending rate per 200 ms bin from 2 s before the drop to 8 s after (times from GCC's drop
    instant: each scheme's series is shifted to it), and the runs' rows (their ``error``)."""
    u = random.Random(seed).uniform(144.0, 176.0)
    drop = drop_instant("GCC+FIFO", u)
    specs = [DropRun(k, scheme, drop_instant(scheme, u), seed, copa=copa, repair=repair, paced=paced, gcc=gcc, in_band=in_band) for scheme in ABW_SCHEMES]
    rows, data = run_grid(out, "abw-drop-timeline", drop_window, specs, runner, "abw drop timeline", data=["series"])
    parts = []
    for spec, fs in zip(specs, data["series"]):
        if fs is not None:
            fs.insert(0, "scheme", spec.scheme)
            fs["t_s"] += drop - spec.drop_s
            parts.append(fs)
    cols = ["scheme", "t_s", "rtt_ms", "send_kbps", "recv_kbps"]
    return drop, pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols), rows


def plot_drop_timeline(drop: float, series: pd.DataFrame, k: int, path: Path) -> Path:
    """RTT and sending rate around the drop, one line per scheme: why ACK holding barely moves
    Copa (the queue after the drop is what was in flight at the old rate; Copa's window shrinks
    additively, a few packets per RTT, whatever signals it earlier)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for scheme, g in series.groupby("scheme", sort=False):
        axes[0].plot(g["t_s"] - drop, g["rtt_ms"], label=scheme, lw=1.2)
        axes[1].plot(g["t_s"] - drop, g["send_kbps"] / 1000, label=scheme, lw=1.2)
    top = CONDITIONS["abw_mbps"] * CONDITIONS["trace_scale"]
    axes[0].axhline(200, color="grey", ls="--", lw=0.8)
    axes[1].step([-2, 0, 8], [top, top / k, top / k], where="post", color="k", lw=0.8, label="capacity")
    axes[0].set_ylabel("network RTT (ms)")
    axes[1].set_ylabel("sending rate (Mbit/s)")
    axes[1].set_xlabel(f"seconds since the drop ({top:.1f} -> {top / k:.2f} Mbit/s, k = {k})")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def worst_throughput_trace(df: pd.DataFrame) -> str | None:
    """The trace on which GCC+Zhuge keeps the smallest share of GCC+FIFO's throughput."""
    ok = df[(df["error"] == "") & df["scheme"].isin(["GCC+FIFO", "GCC+Zhuge"])]
    t = ok.pivot_table(index="trace", columns="scheme", values="throughput_kbps")
    if t.empty or not {"GCC+FIFO", "GCC+Zhuge"} <= set(t.columns):
        return None
    share = (t["GCC+Zhuge"] / t["GCC+FIFO"]).dropna()
    return str(share.idxmin()) if len(share) else None


def rate_series(spec: TraceRun) -> dict[str, Any]:
    """One trace run's throughput and its video series (sending rate, one-way delay per bin) as
    its data ``series``: the runs of :func:`rate_timeline`."""
    from ..api import run

    cap = trace_capacity(spec.trace, spec.trace_format)
    sc = scenario(
        spec.scheme, cap, spec.wifi_ap and spec.family.startswith("W"), spec.seconds, spec.seed, spec.family.startswith("C"), spec.gcc_zhuge_queue, copa=spec.copa, repair=spec.repair, paced=spec.paced, gcc=spec.gcc, zhuge_in_band=spec.in_band
    )
    r = run(sc, progress=False, tables=[])
    fs = r.flow_series[r.flow_series["flow"] == "video"]
    return {"throughput_kbps": r.summary["flows"][0]["throughput_kbps"], "series": fs[["t_s", "send_kbps", "owd_ms"]]}


#: The schemes :func:`plot_rate_timeline` draws.
RATE_TIMELINE_SCHEMES = ("GCC+FIFO", "GCC+CoDel", "GCC+Zhuge")


def rate_timeline(spec: TraceRun, out: Path, runner: Runner) -> tuple[pd.DataFrame, list[pd.DataFrame | None]]:
    """The runs of :data:`RATE_TIMELINE_SCHEMES` over ``spec``'s trace, as the grid
    ``gcc-rate-timeline`` in ``out``: their rows and series."""
    specs = [replace(spec, scheme=scheme) for scheme in RATE_TIMELINE_SCHEMES]
    rows, data = run_grid(out, "gcc-rate-timeline", rate_series, specs, runner, "gcc rate timeline", data=["series"])
    return rows, data["series"]


def plot_rate_timeline(spec: TraceRun, rows: pd.DataFrame, series: list[pd.DataFrame | None], path: Path) -> Path:
    """Sending rate and RTT over one trace for GCC+FIFO, GCC+CoDel and GCC+Zhuge, with the
    trace's capacity: where in-band Zhuge costs GCC throughput (after each capacity collapse,
    GCC cuts to 0.85x an acknowledged bitrate measured from predicted arrivals, which follow the
    AP's dequeue rate during the collapse, and then climbs back additively)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..api import run

    fig, axes = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    if sniff_format(Path(spec.trace)) == "rate":
        with open(spec.trace, encoding="utf-8") as f:
            raw = [float(line.split()[1]) for line in f if line.strip() and not line.startswith("#")]
        # As the loader replays it: from the first line, 200 ms a line, x 15/13, a sample above
        # 100x the median clipped to the one before.
        median = sorted(raw)[len(raw) // 2] if raw else 0.0
        rates: list[float] = []
        for sample in raw:
            rates.append((rates[-1] / CONDITIONS["trace_scale"] if rates else median) if median > 0 and sample > 100 * median else sample)
            rates[-1] *= CONDITIONS["trace_scale"]
        step = CONDITIONS["trace_step_ms"] / 1000.0
        axes[0].step([i * step for i in range(len(rates))], rates, where="post", color="k", lw=0.5, label="capacity")
    for scheme, thr_kbps, fs in zip(rows["scheme"], rows["throughput_kbps"], series):
        if fs is None:
            continue
        thr = thr_kbps / 1000
        axes[0].plot(fs["t_s"], fs["send_kbps"].rolling(5, min_periods=1).mean() / 1000, lw=1, label=f"{scheme} ({thr:.1f} Mbit/s)")
        axes[1].plot(fs["t_s"], fs["owd_ms"] + WIRED_ONE_WAY_MS + HOP_MS, lw=0.8, label=scheme)
    axes[0].set_ylim(0, None)
    axes[0].set_ylabel("sending rate, 1 s mean (Mbit/s)")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("network RTT (ms)")
    axes[1].set_xlabel(f"seconds ({Path(spec.trace).name}, {spec.family})")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


#: The predicted-delay ranges of the paper's accuracy figure (Fig. 19: 1-64 ms and above).
ACCURACY_RANGES = [("all", 0.0, float("inf")), ("1-64 ms", 1.0, 64.0), (">= 64 ms", 64.0, float("inf"))]
#: One RTT of the paper's setup, the yardstick its accuracy figure uses (50 ms).
ONE_RTT_MS = 50.0


def accuracy_table(pred: pd.DataFrame) -> pd.DataFrame:
    """Absolute prediction error per predicted-delay range: packets, percentiles and the share of
    errors under one RTT (50 ms)."""
    cols = ["predicted_range", "packets", "error_p50_ms", "error_p90_ms", "error_p99_ms", "share_under_one_rtt"]
    if pred.empty:
        return pd.DataFrame(columns=cols)
    # Plain arrays: a million predictions per reproduction, and pandas' masks and quantiles cost
    # several times numpy's.
    predicted = pred["predicted_ms"].to_numpy(dtype=float)
    err = np.abs(predicted - pred["actual_ms"].to_numpy(dtype=float))
    rows = []
    for name, lo, hi in ACCURACY_RANGES:
        e = err[(predicted >= lo) & (predicted < hi)]
        if len(e) == 0:
            continue
        p50, p90, p99 = np.quantile(e, [0.5, 0.9, 0.99])
        rows.append(
            {
                "predicted_range": name,
                "packets": len(e),
                "error_p50_ms": float(p50),
                "error_p90_ms": float(p90),
                "error_p99_ms": float(p99),
                "share_under_one_rtt": float((e < ONE_RTT_MS).mean()),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def plot_accuracy(pred: pd.DataFrame, path: Path) -> Path:
    """The paper's Fig. 19 as drawn there: the CDF of the absolute prediction error on a log
    axis, one curve per predicted-delay range, with one RTT (50 ms) marked."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plots import cdf_steps

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    if not pred.empty:
        err = (pred["predicted_ms"] - pred["actual_ms"]).abs()
        for name, lo, hi in ACCURACY_RANGES:
            e = np.sort(err[(pred["predicted_ms"] >= lo) & (pred["predicted_ms"] < hi)].to_numpy())
            if len(e) == 0:
                continue
            # Errors below 0.01 ms are drawn at 0.01 ms (the log axis has no zero).
            x, cdf = cdf_steps(e)
            ax.step(np.maximum(x, 0.01), cdf, where="post", label=f"predicted {name} ({len(e)})")
        ax.axvline(ONE_RTT_MS, color="grey", ls="--", lw=0.8, label="one RTT (50 ms)")
        ax.legend(fontsize="small", loc="lower right")
    ax.set_xscale("log")
    ax.set_xlabel("|predicted - actual| delay through the AP (ms)")
    ax.set_ylabel("CDF")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3, which="both")
    ax.set_title("Fortune Teller prediction error (GCC+Zhuge runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _figure_runner(runner: Runner) -> Runner:
    """How the figures' few runs go: beside the ABW drops with the local pool, one at a time in
    the drawing process (the drops' pool has the cores) and with no progress bar (it would
    interleave with the drops'); on Ray as the rest."""
    return runner if runner.backend != "local" else Runner(1, "local", None, False)


def _figures(
    out: Path, df: pd.DataFrame, specs: list[TraceRun], pred: pd.DataFrame, ks: list[int], seed: int, runner: Runner,
    copa: str, repair: str, paced: bool, gcc: str, in_band: str,
) -> tuple[list[Path], list[tuple[str, pd.DataFrame]]]:
    """The figures but the ABW-drop one: the GCC rate timeline over the trace where GCC+Zhuge
    keeps the least of GCC+FIFO's throughput, the ABW-drop timeline (and its CSV) and the
    accuracy CDF. Returns the files written and each figure grid's rows."""
    written: list[Path] = []
    rows: list[tuple[str, pd.DataFrame]] = []
    worst = worst_throughput_trace(df)
    if worst is not None:
        spec = next(sp for sp in specs if sp.trace == worst)
        rrows, rseries = rate_timeline(spec, out, runner)
        rows.append(("gcc rate timeline", rrows))
        written.append(plot_rate_timeline(spec, rrows, rseries, out / "gcc_rate_timeline.png"))
    k_line = 10 if 10 in ks else ks[0]
    drop_at, series, trows = drop_timeline(k_line, seed, out, runner, copa, repair, paced, gcc, in_band)
    rows.append(("abw drop timeline", trows))
    written.append(write_csv(series, out / "abw_drop_timeline.csv"))
    written.append(plot_drop_timeline(drop_at, series, k_line, out / "abw_drop_timeline.png"))
    written.append(plot_accuracy(pred, out / "accuracy.png"))
    return written, rows


def reproduce(
    out_dir: str | Path,
    traces: list[str] | None = None,
    *,
    seconds: float = 300.0,
    ks: list[int] | None = None,
    seed: int = 1,
    jobs: int | None = None,
    progress: bool | None = None,
    plots: bool = True,
    trace_format: str = "auto",
    seeds: int = 1,
    wifi_ap: bool = False,
    gcc_zhuge_queue: str = "codel",
    copa: str = "artifact",
    repair: str = CONDITIONS["repair"],
    paced: bool = CONDITIONS["paced"],
    gcc: str = CONDITIONS["gcc"],
    in_band: str = CONDITIONS["zhuge_in_band"],
    log: Callable[[str], None] = print,
    backend: str = "local",
    address: str | None = None,
    force: bool = False,
) -> dict[str, Any]:
    """Runs the whole evaluation, writes its files to ``out_dir`` and returns the tables. The ABW
    drop runs ``seeds`` seeds (``seed``, ``seed + 1``, ...), each with its own drop instants. The
    runs go through the sweep runner (``backend`` local or ray) and are kept in
    ``out_dir/sweeps/``: the same call on the same folder resumes (``force``: start again).
    ``copa``: the Copa schemes' variant, "artifact" (the Zhuge artifact's ``tcp-copa.cc``, which
    its evaluation ran) or "paper" (NSDI 2018);
    ``repair``: the GCC flows' loss repair ("timeout", the artifact's; "nack": WebRTC's);
    ``paced``: GCC's own pacing instead of the artifact's frame-at-once sending;
    ``gcc``: the GCC schemes' GCC, "artifact" (the Zhuge artifact's ``gcc-controller.cc``, which
    its evaluation ran) or "libwebrtc" (lowlat's goog_cc);
    ``in_band``: Zhuge's in-band reports, "sampled" (the artifact's: one sampled packet a
    millisecond) or "per-packet" (every packet's prediction, every millisecond)."""
    check_seconds(seconds)
    if in_band not in IN_BAND:
        raise ValueError(f"in_band: got {in_band!r}, expected one of {', '.join(IN_BAND)}")
    copa_params("Copa", copa)  # a bad variant is refused before any run
    gcc_params(gcc)
    ks = ks or ABW_KS
    given = digest(f for _, f in find_traces(traces)) if traces else None
    options = dict(seconds=seconds, ks=ks, seed=seed, seeds=seeds, trace_format=trace_format, wifi_ap=wifi_ap, gcc_zhuge_queue=gcc_zhuge_queue, copa=copa, repair=repair, paced=paced, gcc=gcc, in_band=in_band, traces=traces, traces_digest=given)
    out = results_folder(out_dir, "zhuge", force, options)
    runner = Runner(jobs, backend, address, progress)
    found = family_traces(out, traces, seed, seconds)
    started = time.perf_counter()
    # Each trace's length once (counting a trace's lines for each of its six runs cost a second
    # before the first run started).
    lengths = {f: run_seconds(f, trace_format, seconds) for _, f in found}
    specs = [
        TraceRun(fam, str(f), s[0], lengths[f], seed, trace_format, wifi_ap, gcc_zhuge_queue, copa, repair, paced, gcc, in_band)
        for fam, f in found
        for s in SCHEMES
    ]
    df, data = run_grid(out, "traces", run_trace, specs, runner, "zhuge traces", data=["predictions"], cost=trace_cost)
    preds = data["predictions"]
    written = [write_csv(df, out / "summary.csv")]
    tables = family_tables(df)
    for fam, t in tables.items():
        written.append(write_csv(t, out / f"table_{fam}.csv"))
    red = reductions(tables)
    written.append(write_csv(red, out / "reductions.csv"))
    pred = pd.concat([p for p in preds if p is not None], ignore_index=True) if any(p is not None for p in preds) else pd.DataFrame(columns=["predicted_ms", "actual_ms"])
    acc = accuracy_table(pred)
    written.append(write_csv(acc, out / "accuracy.csv"))

    # The figures' own runs (grids too: resumed, failures recorded) and three of the four
    # drawings go in a forked child while the ABW drops run: after them, they kept one core
    # mostly idle. (On Ray they run after the drops, as the rest.)
    figures: Callable[[], Any] | None = None
    if plots:
        from ..api import in_background

        from .. import plots as _matplotlib_loaded  # noqa: F401 - once, before the fork (Agg)

        def draw() -> tuple[list[Path], list[tuple[str, pd.DataFrame]]]:
            return _figures(out, df, specs, pred, ks, seed, _figure_runner(runner), copa, repair, paced, gcc, in_band)

        figures = in_background(draw) if runner.backend == "local" else draw
    dspecs = []
    for sd in range(seed, seed + max(1, seeds)):
        rng = random.Random(sd)
        # One draw per k in GCC's range, placed alike in each scheme's own (Copa: 20-52 s).
        draws = {k: rng.uniform(144.0, 176.0) for k in ks}
        dspecs += [
            DropRun(k, s, drop_instant(s, draws[k]), sd, q, copa, repair, paced, gcc, in_band) for k in ks for s in ABW_SCHEMES for q in ("fifo", "codel")
        ]
    drows = run_drops(out, dspecs, runner)
    written.append(write_csv(drows, out / "abw_drop.csv"))
    figure_rows: list[tuple[str, pd.DataFrame]] = []
    if figures is not None:
        written.append(plot_drop(drows, out / "abw_drop.png"))
        got = figures()
        if isinstance(got, Exception):
            raise got
        drawn, rows = got
        written += drawn
        figure_rows += rows
    wall = time.perf_counter() - started
    failed = int((df["error"] != "").sum() + (drows["error"] != "").sum() + sum((r["error"] != "").sum() for _, r in figure_rows))
    fmt = {"index": False, "float_format": lambda x: f"{x:.3f}" if abs(x) < 10 else f"{x:.1f}"}
    log(f"{len(df) + len(drows) + sum(len(r) for _, r in figure_rows)} runs in {wall:.1f} s, {failed} failed")
    for fam, t in tables.items():
        what = FAMILIES[fam][1] if fam in FAMILIES else "traces"
        # A rate trace runs as long as its lines (at most ``seconds``): say what the runs were.
        ran = df.loc[(df["family"] == fam) & (df["error"] == ""), "seconds"]
        lo, hi = (ran.min(), ran.max()) if len(ran) else (seconds, seconds)
        each = f"{lo:g} s each" if lo == hi else f"{lo:g}-{hi:g} s each"
        log(f"\n{fam} ({what}; mean over {int(t['traces'].max())} trace(s), {each}):")
        log(t.to_string(**fmt))
    if not red.empty:
        log("\nZhuge's reduction against the best baseline (positive: lower with Zhuge):")
        log(red.to_string(**fmt))
    ok = drows[drows["error"] == ""]
    if not ok.empty:
        n = ok["seed"].nunique()
        t_own, t_art = drop_tables(drows)
        written.append(write_csv(t_art.reset_index(), out / "abw_drop_artifact.csv"))
        log(f"\nABW drop, seconds in the 20 s after the drop with network RTT > 200 ms, each scheme on its queue (mean over {n} seed(s)):")
        log(t_own.to_string(float_format=lambda x: f"{x:.2f}"))
        log(f"\nABW drop, the artifact's statistic: seconds from the first sender smoothed RTT > 200 ms to the first back below (mean over {n} seed(s)), the better of FIFO and CoDel:")
        log(t_art.to_string(float_format=lambda x: f"{x:.2f}"))
    if not acc.empty:
        log("\n|prediction error| by predicted delay (GCC+Zhuge runs):")
        log(acc.to_string(**fmt))
    failures = [(f"{r.family} {Path(r.trace).name}", r.scheme, r.error) for r in df[df["error"] != ""].itertuples()]
    failures += [("abw drop", f"k={r.k} {r.scheme}", r.error) for r in drows[drows["error"] != ""].itertuples()]
    failures += [(what, r.scheme, r.error) for what, rows in figure_rows for r in rows[rows["error"] != ""].itertuples()]
    for line in failure_lines(failures):
        log(line)
    return {"summary": df, "tables": tables, "reductions": red, "abw_drop": drows, "accuracy": acc, "written": written, "failed": failed}
