#pragma once
// A pass after the others: input and variable actors whose registers nobody reads.
#include "plan/plan.hpp"

namespace weir::internal {

/// Removes the input actors whose pieces nobody reads: a placeholder read whole, or in other rows, on
/// other devices than its own pieces are on is read again there (boxing.hpp reads it again), and the pieces
/// first made for it may be left unread. Likewise a whole variable that every device reads as its own rows
/// (boxing.hpp's RowsOfVariable presents those rows by actors of their own). Such an actor would not lead
/// to the sink, and could act for a call that had already completed and freed its inputs.
void DropUnreadInputsAndVariables(Plan& plan);

}  // namespace weir::internal
