//! Median, minimum and maximum of a few rounds.
//!
//! A benchmark round on a shared VM is noisy; the harness reports the median of the
//! rounds together with their spread rather than a mean that one disturbed round skews.

/// Median with minimum and maximum of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median (mean of the two middle samples for an even count).
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Number of samples.
    pub count: usize,
}

/// Summarises `samples`; `None` if there are none. NaN samples are ignored.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Summary {
        median,
        min: v[0],
        max: v[n - 1],
        count: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_count_takes_middle() {
        let s = summarize(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(
            s,
            Summary {
                median: 3.0,
                min: 1.0,
                max: 5.0,
                count: 3
            }
        );
    }

    #[test]
    fn even_count_averages_middle_pair() {
        let s = summarize(&[4.0, 1.0, 10.0, 2.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 10.0);
    }

    #[test]
    fn single_and_empty_and_nan() {
        assert_eq!(summarize(&[7.5]).unwrap().median, 7.5);
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[f64::NAN]), None);
        let s = summarize(&[f64::NAN, 2.0, 4.0]).unwrap();
        assert_eq!((s.median, s.count), (3.0, 2));
    }
}
