// lowlat's driver around the reference SCReAM v2 sender (EricssonResearch/scream, ScreamV2Tx) for
// the differential harness (scripts/scream_diff.py, docs/scream-differential.md).
//
// It links the reference's own ScreamV2Tx, ScreamRx, RtpQueue and VideoEnc classes (built from a
// checkout the user provides; nothing of it is kept in lowlat) and puts them on a path modelled
// like lowlat's, so that the two runs differ only in the controller:
// - bottleneck of `capacity` bit/s, drop-tail queue of 300 ms worth of bytes, one-way delay
//   rtt / 2, jitter: Gaussian of standard deviation `jitter`, truncated at +-3 sigma, never
//   reordering (a packet is delivered no earlier than the previous one plus its serialisation);
// - feedback (the reference receiver's RFC 8888 reports) every 5 packets but at most every
//   20 ms, at least every 200 ms while packets arrive (lowlat's `feedback = "scream"`), back
//   after rtt / 2 without loss or jitter;
// - encoder: the reference VideoEnc replaying a frame-size trace scaled to the target, adopting a
//   new target only 0.2 s after its last change (lowlat's encoder, RFC 8593 tau_v); packets carry
//   at most 1200 B of payload + 48 B of headers on the wire and to the controller, as in lowlat;
// - the RTP queue is flushed when its oldest packet waited 2 s (lowlat's pacer).
//
// Usage: ref_driver CAPACITY_BPS RTT_S JITTER_S DURATION_S FPS TRACE_FILE SEED RMIN RMAX FROM_S
//        [STEP_AT_S STEP_CAPACITY_BPS [L4S_STEP_S]]  (the capacity changes at STEP_AT_S; a step
//        at 1e18 means none)
// With L4S_STEP_S > 0 the sender runs in L4S mode (isL4s, packets ECT(1)) and the bottleneck marks
// a packet CE when its sojourn at the start of its service is at least L4S_STEP_S (lowlat's
// `kind = "l4s"` queue with `threshold`, marking at dequeue); the receiver reports the ECN bits in
// its RFC 8888 feedback.
// Prints one line: "rate_kbps=<received rate over [FROM_S, DURATION_S]> qdelay_mean_ms=<mean
// bottleneck sojourn over the same span> qdelay_p95_ms=<...> rtt_ms=<mean smoothed RTT>".
#include "ScreamTx.h"
#include "ScreamRx.h"
#include "RtpQueue.h"
#include "VideoEnc.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <random>
#include <vector>

void packet_free(void*, uint32_t) {}

namespace {
const int kWireExtra = 36;   // lowlat: IP 20 + UDP 8 + transport-wide extension 8 (RTP 12 is in VideoEnc)
const int kPayloadMss = 1200;
const double kTauV = 0.2;
const double kQueueLimitS = 0.3;

struct Pkt {
  int size;  // size as sent (RTP + kWireExtra)
  uint16_t seq;
  bool mark;
  uint32_t ts;
  uint8_t ecn;    // ECN bits at delivery: 0 Not-ECT, 1 ECT(1), 3 CE
  double enq;     // arrival at the bottleneck
  double arrive;  // delivery at the receiver
};
struct Fb {
  double at;
  std::vector<unsigned char> buf;
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 11) {
    fprintf(stderr, "usage: ref_driver CAPACITY_BPS RTT_S JITTER_S DURATION_S FPS TRACE SEED RMIN RMAX FROM_S\n");
    return 2;
  }
  const double capacity = atof(argv[1]), rtt = atof(argv[2]), jitter = atof(argv[3]);
  const double duration = atof(argv[4]), fps = atof(argv[5]);
  char* trace = argv[6];
  const unsigned seed = (unsigned)atoi(argv[7]);
  const float rmin = (float)atof(argv[8]), rmax = (float)atof(argv[9]);
  const double from = atof(argv[10]);
  // Optional capacity step: STEP_AT_S STEP_CAPACITY_BPS.
  const double stepAt = argc > 12 ? atof(argv[11]) : 1e18;
  const double stepCapacity = argc > 12 ? atof(argv[12]) : 0.0;
  // Optional L4S step threshold (seconds of sojourn), after the step arguments.
  const double l4sStep = argc > 13 ? atof(argv[13]) : 0.0;
  const bool l4s = l4sStep > 0.0;
  const bool logEvery = getenv("SCREAM_DIFF_LOG") != nullptr;
  double cap = capacity;
  const double owd = rtt / 2.0;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);

  // The reference simulator's settings, minus its extras (relaxed pacing, its 10000 B start
  // window and 2000 B minimum): the library defaults with the v2 draft's 60 ms target and 0.8 ECN
  // beta, classic (no ECN), as lowlat's ScreamV2Config::default(); isL4s with an L4S step.
  // SCREAM_DIFF_NO_ADAPTIVE_PACING=1: maxAdaptivePacingRateScale 1.0 (the pacing rate no longer
  // scales with frame size), the one pacing mechanism lowlat's controller cannot see.
  const float adaptivePacing = getenv("SCREAM_DIFF_NO_ADAPTIVE_PACING") ? 1.0f : 1.5f;
  ScreamV2Tx* tx = new ScreamV2Tx(0.7f, 0.8f, 0.06f, 0, 1.5f, adaptivePacing, 2.0f, 0.05f, l4s, 3.0f, false, false);
  tx->setCwndMinLow(3000);
  tx->enablePacketPacing(true);
  int mssList[1] = {kPayloadMss + kRtpOverHead + kWireExtra};
  tx->setMssListMinPacketsInFlight(mssList, 1, 0);
  ScreamRx* rx = new ScreamRx(0, 5);
  RtpQueue* q = new RtpQueue();
  VideoEnc* enc = new VideoEnc(q, (float)fps, trace, 0, 0.0f);
  enc->setMss(kPayloadMss);
  tx->registerNewStream(q, 10, 1.0f, rmin, rmin, rmax, 2.0f, false, 0.0f, false);

  std::deque<Pkt> queue;   // waiting at the bottleneck
  std::deque<Pkt> flight;  // propagating to the receiver
  std::deque<Fb> fbs;      // feedback propagating back
  double linkFree = 0.0, lastDelivery = 0.0, lastSer = 0.0;
  long queuedBytes = 0;
  double encRate = rmin, lastChange = -1e9;
  double lastFb = 0.0;
  int sinceFb = 0;
  double rxBytes = 0.0, sojournSum = 0.0;
  long sojournN = 0;
  long ceMarks = 0;
  std::vector<double> sojourns;
  double rttSum = 0.0;
  long rttN = 0;
  long frame = 0;
  long nextCall = -1;
  float retVal = -1.0f;
  uint32_t ssrc = 0;
  const long nEnd = (long)(duration * 65536.0);
  for (long n = 0; n <= nEnd; n++) {
    const uint32_t tNtp = (uint32_t)n;
    const double t = n / 65536.0;
    bool isEvent = false;
    if (t >= stepAt) cap = stepCapacity;
    // A frame is captured at k / fps.
    if (n == (long)std::ceil(frame * 65536.0 / fps)) {
      float br = tx->getTargetBitrate(tNtp, 10);
      if (br > 0 && std::fabs(br - encRate) > 1e-3 && t - lastChange >= kTauV) {
        encRate = br;
        lastChange = t;
      }
      enc->setTargetBitrate((float)encRate);
      int bytes = enc->encode((float)t);
      tx->newMediaFrame(tNtp, 10, bytes, true);
      frame++;
      retVal = tx->isOkToTransmit(tNtp, ssrc);
      if (retVal > 0) nextCall = n + std::max(1, (int)(65536.0f * retVal));
    }
    // Bottleneck service (FIFO, one packet at a time).
    while (!queue.empty() && linkFree <= t) {
      Pkt p = queue.front();
      queue.pop_front();
      queuedBytes -= p.size;
      double start = std::max(linkFree, p.enq);
      if (l4s && start - p.enq >= l4sStep) {
        p.ecn = 0x03;
        ceMarks++;
      }
      if (start >= from) {
        sojournSum += start - p.enq;
        sojournN++;
        sojourns.push_back(start - p.enq);
      }
      double ser = p.size * 8.0 / cap;
      double txEnd = start + ser;
      linkFree = txEnd;
      double z = 0.0;
      if (jitter > 0) {
        do { z = normal(rng); } while (std::fabs(z) > 3.0);
        z *= jitter;
      }
      double d = std::max(txEnd + owd + z, txEnd);
      d = std::max(d, lastDelivery + lastSer);
      lastDelivery = d;
      lastSer = ser;
      p.arrive = d;
      flight.push_back(p);
    }
    // Deliveries.
    while (!flight.empty() && flight.front().arrive <= t) {
      Pkt p = flight.front();
      flight.pop_front();
      if (t >= from) rxBytes += p.size;
      rx->receive(tNtp, 0, 10, p.size, p.seq, p.ecn, p.mark, p.ts);
      sinceFb++;
    }
    // Feedback: every 5 packets but at most every 20 ms, at least every 200 ms.
    if (sinceFb > 0 && ((sinceFb >= 5 && t - lastFb >= 0.02) || t - lastFb >= 0.2)) {
      unsigned char buf[2000];
      int size = 0;
      if (rx->createStandardizedFeedback(tNtp, false, buf, size)) {
        fbs.push_back(Fb{t + owd, std::vector<unsigned char>(buf, buf + size)});
      }
      lastFb = t;
      sinceFb = 0;
    }
    while (!fbs.empty() && fbs.front().at <= t) {
      tx->incomingStandardizedFeedback(tNtp, fbs.front().buf.data(), (int)fbs.front().buf.size());
      fbs.pop_front();
      if (t >= from) {
        rttSum += tx->getSRtt();
        rttN++;
      }
      retVal = tx->isOkToTransmit(tNtp, ssrc);
      isEvent = true;
    }
    if (n == nextCall && retVal != 0.0f) {
      retVal = tx->isOkToTransmit(tNtp, ssrc);
      if (retVal > 0) nextCall = n + std::max(1, (int)(65536.0f * retVal));
    }
    if (retVal == 0.0f) {
      void* buf = 0;
      int size;
      uint32_t s;
      uint16_t seq;
      bool mark;
      uint32_t ts;
      float qd = q->getDelay((float)t);
      if (q->sendPacket(&buf, size, s, seq, mark, ts)) {
        int wire = size + kWireExtra;
        if (queue.empty() || queuedBytes + wire <= kQueueLimitS * cap / 8.0) {
          queue.push_back(Pkt{wire, seq, mark, ts, (uint8_t)(l4s ? 0x01 : 0x00), t, 0.0});
          queuedBytes += wire;
        }
        float pace = tx->addTransmitted(tNtp, 10, wire, seq, mark, qd, ts);
        nextCall = n + std::max(1, (int)(65536.0f * pace));
      }
      retVal = -1.0f;
    }
    (void)isEvent;
    // SCREAM_DIFF_LOG=1: the reference's short log every 0.5 s on stderr (for side-by-side
    // traces: queue delay, sRTT, cwnd, in flight, rates, target).
    if (logEvery && n % (65536 / 2) == 0) {
      char s[1000];
      tx->getShortLog((float)t, s);
      fprintf(stderr, "t=%.1f %s\n", t, s);
    }
  }
  std::sort(sojourns.begin(), sojourns.end());
  double p95 = sojourns.empty() ? 0.0 : sojourns[(size_t)(0.95 * (sojourns.size() - 1))];
  printf("rate_kbps=%.1f qdelay_mean_ms=%.2f qdelay_p95_ms=%.2f rtt_ms=%.1f ce_marks=%ld\n",
         rxBytes * 8.0 / (duration - from) / 1000.0, sojournN ? 1000.0 * sojournSum / sojournN : 0.0,
         1000.0 * p95, rttN ? 1000.0 * rttSum / rttN : 0.0, ceMarks);
  return 0;
}
