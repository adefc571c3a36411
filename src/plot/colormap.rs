//! The viridis colour map (perceptually uniform, readable in grey and by
//! most colour-blind readers): nine samples of matplotlib's map, joined by
//! linear interpolation in RGB. Heatmap cells and contour lines take their
//! colours from it.

/// Viridis at 0, 1/8, ..., 1.
const VIRIDIS: [[u8; 3]; 9] = [
    [68, 1, 84],
    [71, 45, 123],
    [59, 82, 139],
    [44, 114, 142],
    [33, 144, 140],
    [39, 173, 129],
    [93, 200, 99],
    [170, 220, 50],
    [253, 231, 37],
];

/// The colour at `t` in [0, 1] (values outside are clamped; NaN is 0).
pub fn viridis(t: f64) -> [u8; 3] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let at = t * (VIRIDIS.len() - 1) as f64;
    let below = (at.floor() as usize).min(VIRIDIS.len() - 2);
    let fraction = at - below as f64;
    let (a, b) = (VIRIDIS[below], VIRIDIS[below + 1]);
    let mix = |k: usize| (a[k] as f64 + (b[k] as f64 - a[k] as f64) * fraction).round() as u8;
    [mix(0), mix(1), mix(2)]
}

/// Where `v` falls between `lo` and `hi`, in [0, 1] (clamped; an empty
/// span gives the middle).
pub fn normalized(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_runs_from_purple_to_yellow() {
        assert_eq!(viridis(0.0), [68, 1, 84]);
        assert_eq!(viridis(1.0), [253, 231, 37]);
        assert_eq!(viridis(0.5), [33, 144, 140]);
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(7.0), viridis(1.0));
        // Halfway between two samples is their average.
        assert_eq!(viridis(1.0 / 16.0), [70, 23, 104]);
    }

    #[test]
    fn viridis_gets_brighter() {
        let brightness = |c: [u8; 3]| c.iter().map(|&v| v as u32).sum::<u32>();
        let samples: Vec<u32> = (0..=64)
            .map(|k| brightness(viridis(k as f64 / 64.0)))
            .collect();
        assert!(samples.windows(2).all(|w| w[0] <= w[1] + 2), "{samples:?}");
    }

    #[test]
    fn normalization_clamps() {
        assert_eq!(normalized(5.0, 0.0, 10.0), 0.5);
        assert_eq!(normalized(-1.0, 0.0, 10.0), 0.0);
        assert_eq!(normalized(f64::INFINITY, 0.0, 10.0), 1.0);
        assert_eq!(normalized(3.0, 3.0, 3.0), 0.5);
    }
}
