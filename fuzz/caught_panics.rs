//! Panics the workbook readers catch by design. `brandhub_sheet::read` runs calamine inside
//! `catch_unwind` and answers a malformed workbook's parser panic as an unreadable file; a
//! fuzz build has overflow checks on, so calamine's arithmetic on hostile lengths panics where
//! a release build would not. libFuzzer's panic hook would count those as crashes although
//! the reader recovers from them: this hook lets panics located in calamine unwind to that
//! `catch_unwind`, and keeps every other panic (ours) a crash.

/// Installs the hook, wrapping libFuzzer's.
pub fn tolerate_calamine_panics() {
    let crash = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_calamine = info
            .location()
            .is_some_and(|at| at.file().contains("/calamine-"));
        if !in_calamine {
            crash(info);
        }
    }));
}
