//! How far training has come, as training reports it.

/// Boosting reports its training loss every this many rounds.
pub const TRAIN_LOSS_EVERY: usize = 10;

/// How far training has come, reported after each tree (forest) or round (boosting).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Trees or rounds done.
    pub done: usize,
    /// Trees or rounds asked for.
    pub total: usize,
    /// Boosting: the mean training loss after this round, reported every
    /// [`TRAIN_LOSS_EVERY`] rounds and on the last (each costs a pass over the
    /// rows), and every round when rows are held out for validation (the
    /// model keeps that curve).
    pub train_loss: Option<f64>,
    /// Boosting with early stopping: the mean validation loss after this round.
    pub valid_loss: Option<f64>,
}
