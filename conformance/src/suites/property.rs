//! Property tests inside trials: proptest with a fixed seed per trial, printed on failure so
//! the case replays, and the minimal failing case printed as a scenario file.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

/// Environment variable that sets the base seed (a decimal number).
pub(crate) const SEED_VARIABLE: &str = "INCUS_CONFORMANCE_SEED";

/// The base seed when none is given.
const DEFAULT_SEED: u64 = 20_261_130;

/// Cases per property (kept small: every case is a call through the whole stack).
const CASES: u32 = 24;

/// The base seed of this run.
pub(crate) fn base_seed() -> u64 {
    std::env::var(SEED_VARIABLE)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED)
}

/// Checks `property` over `strategy` with a seed derived from the base seed and `trial`.
/// `property` returns `Err(message)` for a failing case; the message should carry a reproducer.
pub(crate) fn check<S>(
    trial: &str,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), String>,
) -> Result<(), String>
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    check_cases(trial, CASES, strategy, property)
}

/// [`check`] with `cases` cases.
pub(crate) fn check_cases<S>(
    trial: &str,
    cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), String>,
) -> Result<(), String>
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let seed = base_seed();
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &trial_seed(seed, trial));
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner
        .run(&strategy, |value| property(value).map_err(TestCaseError::fail))
        .map_err(|error| match error {
            TestError::Fail(reason, value) => format!(
                "property failed (replay with {SEED_VARIABLE}={seed}); minimal case {value:?}:\n{reason}"
            ),
            TestError::Abort(reason) => {
                format!("property aborted (seed {SEED_VARIABLE}={seed}): {reason}")
            }
        })
}

/// 32 bytes of seed for one trial: the same for the same base seed and trial name.
/// (FNV-1a over the name, mixed with the seed, expanded with splitmix64: stable everywhere.)
pub(crate) fn trial_seed(seed: u64, trial: &str) -> [u8; 32] {
    let mut state = trial.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    }) ^ seed;
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (property tests inside trials); a promise of
    //! the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;

    #[test]
    fn a_failing_property_reports_the_seed_and_a_minimal_case() {
        let error = check("t::a::b", 0u32..1000, |n| {
            if n >= 10 {
                Err(format!("{n} is too big"))
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert!(error.contains(SEED_VARIABLE), "{error}");
        assert!(error.contains("minimal case 10"), "{error}");
    }

    #[test]
    fn seeds_differ_per_trial_and_repeat_per_name() {
        assert_eq!(trial_seed(1, "a"), trial_seed(1, "a"));
        assert_ne!(trial_seed(1, "a"), trial_seed(1, "b"));
    }
}
