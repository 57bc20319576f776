//! Random loss on a link: none, Bernoulli, or Gilbert-Elliott.
//!
//! Gilbert-Elliott is the two-state Markov chain (good, bad) stated as P(next | current), the form
//! the satellite measurements use (e.g. P(b|g) 0.018, P(g|b) 0.645). The state moves once per
//! packet, then the packet is lost with the loss probability of the new state (1 in bad and 0 in
//! good by default: the simple Gilbert model). Stationary loss = P(b|g) / (P(b|g) + P(g|b)) for
//! that default; mean burst length = 1 / P(g|b).

use lowlat_core::rng::Rng;
use rand::Rng as _;

/// A loss process; draws from the link's own stream.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Each packet lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Two-state Markov loss.
    GilbertElliott {
        /// P(bad | good): probability of moving from good to bad at a packet.
        p_good_to_bad: f64,
        /// P(good | bad): probability of moving from bad to good at a packet.
        p_bad_to_good: f64,
        /// Loss probability while good (0 in the simple Gilbert model).
        loss_in_good: f64,
        /// Loss probability while bad (1 in the simple Gilbert model).
        loss_in_bad: f64,
        /// Current state (starts good).
        bad: bool,
    },
}

impl LossModel {
    /// A simple Gilbert model from the two transition probabilities.
    pub fn gilbert(p_good_to_bad: f64, p_bad_to_good: f64) -> LossModel {
        LossModel::GilbertElliott {
            p_good_to_bad,
            p_bad_to_good,
            loss_in_good: 0.0,
            loss_in_bad: 1.0,
            bad: false,
        }
    }

    /// Decides the fate of the next packet.
    // Always inlined: asked per packet per hop, and most links lose nothing (one comparison).
    #[inline(always)]
    pub fn is_lost(&mut self, rng: &mut Rng) -> bool {
        if let LossModel::None = self {
            return false;
        }
        self.draw(rng)
    }

    /// [`LossModel::is_lost`] of a model that may lose the packet.
    fn draw(&mut self, rng: &mut Rng) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli { p } => *p > 0.0 && rng.random::<f64>() < *p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad, bad } => {
                let flip = if *bad { *p_bad_to_good } else { *p_good_to_bad };
                if rng.random::<f64>() < flip {
                    *bad = !*bad;
                }
                let p = if *bad { *loss_in_bad } else { *loss_in_good };
                p >= 1.0 || (p > 0.0 && rng.random::<f64>() < p)
            }
        }
    }

    /// The long-run loss rate this model produces.
    pub fn stationary_loss(&self) -> f64 {
        match self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => *p,
            LossModel::GilbertElliott { p_good_to_bad, p_bad_to_good, loss_in_good, loss_in_bad, .. } => {
                let pb = p_good_to_bad / (p_good_to_bad + p_bad_to_good);
                pb * loss_in_bad + (1.0 - pb) * loss_in_good
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lowlat_core::rng::stream;

    #[test]
    fn bernoulli_rate_within_three_sigma() {
        let p = 0.01;
        let n = 1_000_000;
        let mut m = LossModel::Bernoulli { p };
        let mut rng = stream(3, "loss");
        let lost = (0..n).filter(|_| m.is_lost(&mut rng)).count() as f64;
        let sigma = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((lost - n as f64 * p).abs() < 3.0 * sigma, "lost {lost}");
    }

    #[test]
    fn gilbert_elliott_stationary_rate_and_burst_length() {
        // The satellite Wi-Fi row of careful-resume-satellite.md.
        let mut m = LossModel::gilbert(0.018, 0.645);
        let expected_rate = m.stationary_loss();
        let expected_burst = 1.0 / 0.645;
        let mut rng = stream(4, "loss");
        let n = 2_000_000;
        let (mut lost, mut bursts, mut in_burst) = (0u64, 0u64, false);
        for _ in 0..n {
            let l = m.is_lost(&mut rng);
            if l {
                lost += 1;
                if !in_burst {
                    bursts += 1;
                }
            }
            in_burst = l;
        }
        let rate = lost as f64 / n as f64;
        let burst = lost as f64 / bursts as f64;
        assert!((rate - expected_rate).abs() < 0.05 * expected_rate, "rate {rate} vs {expected_rate}");
        assert!((burst - expected_burst).abs() < 0.05 * expected_burst, "burst {burst} vs {expected_burst}");
    }
}
