//! A result the worker computes on request, shown until a newer one arrives.

use std::rc::Rc;

/// Something the worker computes on request; the last outcome stays shown while a newer one is
/// computed.
#[derive(Debug, Default, PartialEq)]
pub enum Computed<T> {
    #[default]
    Idle,
    Computing {
        last: Option<Result<Rc<T>, String>>,
    },
    Done(Result<Rc<T>, String>),
}

// By hand: cloning shares the `Rc`s, so `T` itself need not be `Clone`.
impl<T> Clone for Computed<T> {
    fn clone(&self) -> Self {
        match self {
            Computed::Idle => Computed::Idle,
            Computed::Computing { last } => Computed::Computing { last: last.clone() },
            Computed::Done(o) => Computed::Done(o.clone()),
        }
    }
}

impl<T> Computed<T> {
    /// A request went out.
    pub(crate) fn start(&self) -> Self {
        Computed::Computing { last: self.outcome().cloned() }
    }

    /// The wait ends without a new outcome: the last one shows again.
    pub(crate) fn settle(&self) -> Self {
        self.outcome().cloned().map_or(Computed::Idle, Computed::Done)
    }

    /// What to show: the latest outcome.
    pub fn outcome(&self) -> Option<&Result<Rc<T>, String>> {
        match self {
            Computed::Idle | Computed::Computing { last: None } => None,
            Computed::Computing { last: Some(o) } | Computed::Done(o) => Some(o),
        }
    }

    /// The latest result, when it succeeded.
    pub fn shown(&self) -> Option<&Rc<T>> {
        self.outcome().and_then(|o| o.as_ref().ok())
    }

    /// The latest error message.
    pub fn error(&self) -> Option<&str> {
        self.outcome().and_then(|o| o.as_ref().err()).map(String::as_str)
    }

    pub fn busy(&self) -> bool {
        matches!(self, Computed::Computing { .. })
    }
}
