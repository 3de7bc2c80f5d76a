package store

// RowLock is the row-level lock a read takes on the rows it returns, until
// its transaction ends: a clause to append to a SELECT (decision 0176).
type RowLock string

const (
	// NoLock reads without locking.
	NoLock RowLock = ""
	// ForUpdate is for a row the transaction is about to delete.
	ForUpdate RowLock = " FOR UPDATE"
	// ForNoKeyUpdate is for a row the transaction is about to change, not
	// its key, or serializes on. It leaves ForKeyShare free: a transaction
	// that holds it and then waits for another that wants the key share
	// (a folder moved while another moves into it) would deadlock.
	ForNoKeyUpdate RowLock = " FOR NO KEY UPDATE"
	// ForKeyShare is for a row the transaction is about to write a row
	// referring to. A deletion of it then waits for the commit and meets
	// the reference, or the read waits for a deletion under way and finds
	// no row; either way the write never meets a foreign key violation.
	ForKeyShare RowLock = " FOR KEY SHARE"
)
