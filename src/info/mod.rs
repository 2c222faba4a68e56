//! Information models: what the policy sees of the farm, and when it learns it.
//!
//! A policy reads load only through a [`LoadTable`]; an [`InfoModel`] owns that table and decides
//! how the simulation's events change it:
//!
//! - [`Live`]: true queue lengths at every instant (each dispatch adds one, each departure removes
//!   one).
//! - [`Board`]: Mitzenmacher's periodic bulletin board (*How Useful Is Old Information?*, PODC 1997;
//!   IEEE TPDS 11(1), 2000): every `T` time units all true queue lengths are posted at once, and
//!   in between the table does not move.
//! - [`BoardWithDispatch`]: the same board, except that each dispatch also adds one to the chosen
//!   server's entry at once (update-on-dispatch: a dispatcher that counts what it sent since the
//!   last post). `jsq-local` is `jsq` under this model.
//!
//! The event loops are generic over the model, like over the policy, so each (policy, model) pair
//! is monomorphised: the hooks of a model that ignores an event compile to nothing. The model is
//! chosen once per replication from the configuration value [`Information`].

mod board;
mod live;

pub use board::{Board, BoardWithDispatch};
pub use live::Live;

pub use crate::model::Information;
use crate::model::LoadTable;

/// An information model: owns the table policies read and updates it on the simulation's events.
/// `Clone`, as a policy is, so that a replication can be run again from its start.
pub trait InfoModel: Clone {
    /// True for live information: the table is the true queue lengths at every instant, so a
    /// table that counts departures itself may stand in for it.
    const LIVE: bool = false;

    /// The view policies read.
    fn view(&self) -> &LoadTable;

    /// A request was dispatched to `server`.
    fn on_dispatch(&mut self, server: usize);

    /// A request left `server`.
    fn on_departure(&mut self, server: usize);

    /// Period of the posts this model needs (`None`: no posts).
    fn post_period(&self) -> Option<f64>;

    /// A post: the true queue lengths, one per server in server order.
    fn on_post(&mut self, true_lengths: impl Iterator<Item = u32>);
}
