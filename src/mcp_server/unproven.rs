//! The HTTP connections that have not yet sent an authorised request, oldest first. When
//! every connection slot is taken and one more client connects, the oldest of them is
//! closed to make room. Before, a flood of connections that sent nothing (or never a valid
//! token) kept an authorised client waiting until they timed out: 7.2 s behind 1,200 of
//! them, a read timeout per slot's turn (tester 15 F4's leftover). A connection that has
//! sent an authorised request is never closed here: a real client's stream stays.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use tokio::sync::oneshot;

/// The unproven connections, by the order they came in (see the module).
#[derive(Debug, Default)]
pub struct Unproven(Mutex<Open>);

#[derive(Debug, Default)]
struct Open {
    next: u64,
    /// Each connection's number, and what tells it to close.
    by_age: BTreeMap<u64, oneshot::Sender<()>>,
}

/// One connection's place in [`Unproven`].
#[derive(Debug)]
pub struct Entered {
    pub id: u64,
    closed: oneshot::Receiver<()>,
}

impl Entered {
    /// Resolves when the connection is closed to make room; never once it is proven or gone.
    pub async fn closed(self) {
        if self.closed.await.is_err() {
            // Proven (its sender dropped): never closed here.
            std::future::pending::<()>().await;
        }
    }
}

impl Unproven {
    /// A new connection, unproven until [`Unproven::proven`].
    pub fn enter(&self) -> Entered {
        let (tell, closed) = oneshot::channel();
        let mut open = self.lock();
        let id = open.next;
        open.next += 1;
        open.by_age.insert(id, tell);
        Entered { id, closed }
    }

    /// Connection `id` sent an authorised request, or ended: it is no longer one to close.
    pub fn proven(&self, id: u64) {
        self.lock().by_age.remove(&id);
    }

    /// Tell the oldest unproven connection to close; false when there is none.
    pub fn close_oldest(&self) -> bool {
        let oldest = self.lock().by_age.pop_first();
        // A connection that ended meanwhile has dropped its receiver: try the next.
        match oldest {
            Some((_, tell)) => tell.send(()).is_ok() || self.close_oldest(),
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.lock().by_age.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table, poisoned or not: a panic elsewhere leaves it whole.
    fn lock(&self) -> MutexGuard<'_, Open> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_unproven_connection_is_closed_and_a_proven_one_never() {
        let unproven = Unproven::default();
        let first = unproven.enter();
        let second = unproven.enter();
        let third = unproven.enter();
        unproven.proven(first.id);
        assert_eq!(unproven.len(), 2);
        assert!(unproven.close_oldest());
        // The second was the oldest unproven one.
        second.closed().await;
        // One that ended (dropped its place) is passed over for the next.
        drop(third);
        let fourth = unproven.enter();
        assert!(unproven.close_oldest());
        fourth.closed().await;
        assert!(!unproven.close_oldest());
        assert!(unproven.is_empty());
        // A proven connection's wait never resolves.
        let waited =
            tokio::time::timeout(std::time::Duration::from_millis(50), first.closed()).await;
        assert!(waited.is_err());
    }
}
