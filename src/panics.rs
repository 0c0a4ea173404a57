//! A panic inside a library ctxconsole calls on a file's behalf (the local model's candle
//! and tokenizers, fed a `config.json` or `tokenizer.json` an operator wrote) turned into an
//! error, instead of ending the CLI with 101, the console's terminal or an MCP worker.
//!
//! While [`caught`] runs its closure on a thread, a panic on that thread is neither printed
//! nor handed to the console's hook (which would restore the terminal and end the process):
//! its message becomes the error [`caught`] returns. Panics anywhere else are untouched.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// `Some` while this thread is inside [`caught`]: the message of the panic caught, once
    /// there is one.
    static CATCHING: RefCell<Option<Option<String>>> = const { RefCell::new(None) };
}

/// Whether a panic on this thread now will be caught by [`caught`]: a panic hook installed
/// in front of ours (the console's) leaves such a panic alone.
pub fn is_caught_here() -> bool {
    CATCHING.with(|c| c.try_borrow().is_ok_and(|c| c.is_some()))
}

/// `f`'s value, or the message of the panic it raised (what it said, then where). `f` runs
/// once and whatever it held when it panicked is dropped unused, which is why asserting
/// unwind safety is sound here: nothing it touched is read afterwards.
pub fn caught<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_hook();
    let outer = CATCHING.with(|c| c.borrow_mut().replace(None));
    let result = std::panic::catch_unwind(AssertUnwindSafe(f));
    let message = CATCHING.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer));
    result.map_err(|payload| {
        message
            .flatten()
            .unwrap_or_else(|| payload_text(payload.as_ref()))
    })
}

/// The process-wide hook, installed once in front of the one before it: quiet for a panic
/// [`caught`] will catch (its message kept for the error), the previous hook for any other.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let kept = CATCHING.with(|c| match c.try_borrow_mut() {
                Ok(mut c) => match c.as_mut() {
                    Some(message) => {
                        *message = Some(hook_text(info));
                        true
                    }
                    None => false,
                },
                Err(_) => false,
            });
            if !kept {
                previous(info);
            }
        }));
    });
}

fn hook_text(info: &PanicHookInfo<'_>) -> String {
    let what = payload_text(info.payload());
    match info.location() {
        Some(at) => format!("{what} (a panic at {}:{})", at.file(), at.line()),
        None => what,
    }
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with no message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_is_its_message_and_the_thread_goes_on() {
        let err = caught(|| -> u32 { panic!("attempt to divide by zero") }).unwrap_err();
        assert!(
            err.starts_with("attempt to divide by zero (a panic at "),
            "{err}"
        );
        assert!(err.contains("panics.rs:"), "{err}");
        assert!(!is_caught_here(), "the region ends with the call");
        assert_eq!(caught(|| 7), Ok(7));
    }

    #[test]
    fn a_caught_region_inside_another_leaves_the_outer_one_catching() {
        let outer = caught(|| {
            let inner = caught(|| panic!("inner"));
            assert!(inner.is_err_and(|e: String| e.starts_with("inner")));
            assert!(is_caught_here());
            panic!("outer {}", 2);
        })
        .unwrap_err();
        assert!(outer.starts_with("outer 2 "), "{outer}");
    }

    #[test]
    fn a_panic_on_another_thread_is_not_caught() {
        let _ = caught(|| 1);
        let other = std::thread::spawn(is_caught_here).join();
        assert_eq!(other.ok(), Some(false));
        let panicked = std::thread::spawn(|| panic!("not ours")).join();
        assert!(
            panicked.is_err(),
            "a panic outside `caught` still unwinds its thread"
        );
    }
}
