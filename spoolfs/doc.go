// Package spoolfs holds everything newsflow keeps on disk: the article spool
// and its message-id history (this file's subject), per-peer backlog files
// and the durable job queue.
//
// # Durability rules
//
// Every file this package writes follows the same steps, each named after
// the guarantee it gives and taken in this order:
//
//  1. Durable replace: write a temp file, fsync it, rename it over the
//     name, fsync the parent directory; only then acknowledge.
//  2. Self-validating records: each record carries its checks and an end
//     marker, so an incomplete record is absent, not garbage.
//  3. One state, one place: a state is a directory or a file suffix, and a
//     state change is one rename.
//  4. Recovery at open: sweep temps, move in-flight work back to queued,
//     finish half-done removals.
//  5. Quarantine: what is corrupt is copied aside and reported, never
//     deleted silently.
//  6. Group commit: many records, one fsync, then acknowledge them all.
//
// The files below refer to these rules by name.
//
// # Theory of operation: spool and history
//
// Articles arrive by the thousand per second and each must be acknowledged
// upstream (239/235) only once it is durable. One file and one fsync per
// article cannot keep up, so the spool is a log: articles are appended, in
// wire format, to large segment files, and durability is a group commit.
// Many Puts buffer records in memory; one Sync writes them and fdatasyncs the
// segment; then the caller acknowledges them all (group commit). Concurrent
// Syncs elect a leader: one fdatasync covers every connection's Puts, and
// all the callers it covered are woken together. The fdatasync of a small
// round costs least when it overwrites blocks already written and durable,
// with no size or allocation for the file system's journal to commit, so a
// Sync keeps the active segment written with zeros some way (PreWrite)
// past its records, and the rounds after it overwrite them
// (spool_prewrite.go). A Token (segment, offset,
// length) addresses an article's wire bytes in its segment, so a sender can
// hand them to sendfile(2) as they are (Spool.Section, Section.SendTo).
// Spool.Scan walks what arrived after a remembered Position, for a feeder
// that must hand articles to its peers again after a crash.
//
// The History maps message-ids to tokens through an index of the history log
// in memory, after INN's dbz (an open-addressing table of 8-byte slots, a
// fragment of the id's hash and the offset of its log record: 9 to 11 bytes
// an entry, off the Go heap; a candidate is confirmed by reading its record,
// which the page cache holds) plus the entries not yet in the log, and
// answers CHECK/IHAVE: Unknown (want it), Reserved (another connection is
// sending it), Pending (stored, not yet synced), Stored, Rejected. Put checks
// and inserts under one lock, so of two connections storing the same id
// exactly one succeeds; Reserve does the same for ids offered but not yet
// received.
//
// The history needs no fsync of its own. Every spool record carries its
// message-id, so the spool is the history's write-ahead log: Sync fsyncs the
// spool only, and then appends the history records of the articles it made
// durable to the history log without waiting. When a segment fills up
// (and on Close) the log gets a checkpoint record and an fsync: "everything
// in the spool before this position is in the log above". Open replays the
// log, then scans the spool from the last checkpoint on and adds what the log
// lacks: about one segment at most. The history outlives expired articles
// (it keeps refusing their ids) and is compacted by History.Expire.
//
// # Crash safety
//
// Every record is self-validating: magic, a CRC-32C over its
// header, CRC-32Cs over its payload and message-id, and an end marker. A
// record that fails any check is not a record. After a crash, open finds the
// end of each file by reading records until the first that fails; bytes
// after it with no valid record following are the torn tail of an
// interrupted append and are cut off, after a copy goes to quarantine/ (of
// its bytes up to the first whole 4 KiB of zeros after the last that is
// not zero). A tail of zeros alone, such as those written ahead, is cut
// with no copy and no report of damage. Invalid bytes followed by valid
// records are corruption: they are copied to quarantine/, logged, and
// skipped, never deleted (quarantine); the records after them stay
// readable.
//
// Sync fsyncs the segment before the history log ever mentions an article,
// so a history record never points at spool data that may be missing. A
// failed write (ENOSPC) is cut back to the last whole record and retried by
// the next Sync or Put; buffered records are kept, so nothing accepted is
// lost, and stored data is never touched. A failed fsync is fatal until
// reopen: after one, Linux may have dropped the dirty pages and a retry
// could report success for data that is gone.
//
// # On-disk format
//
// The spool directory holds:
//
//	LOCK                 flock(2)ed by the process that has the spool open
//	spool/00000001.seg   segment files, numbered from 1 in hex, never reused
//	history              the history log
//	history.tmp          an interrupted history rewrite (removed at open)
//	quarantine/          copies of corrupt regions and torn tails
//
// All integers are big-endian; CRC means CRC-32C (Castagnoli).
//
// A segment file starts with a 16-byte header: "NFSPOOL1", the segment
// number (4 bytes), and the CRC of those 12 bytes. Records follow:
//
//	0  4  magic "NFAR"
//	4  1  kind: 'A' article, 'R' rejected message-id, 'S' seal
//	5  1  message-id length m (at most 250, RFC 3977 §3.6)
//	6  2  zero
//	8  4  payload length n (the wire article; 0 for 'R' and 'S')
//	12 8  arrival time, Unix nanoseconds ('S': newest arrival in the segment)
//	20 4  CRC of the payload
//	24 4  CRC of the message-id
//	28 4  CRC of bytes 0..27
//	32 n  payload: the article exactly as on the wire (CRLF lines,
//	      dot-stuffed, ending ".\r\n"); a token's offset points here
//	.. m  message-id
//	.. 4  end marker "NFE\n"
//
// A segment is sealed when full: a final 'S' record (36 bytes) records its
// newest arrival, which age expiry reads without scanning the segment.
// Appends never go to a sealed segment. Expiry removes whole segments.
//
// The active segment's file may go on past its last record with zeros
// (at most to SegmentSize): written ahead so that group commits overwrite
// rather than append. They are not records, and nothing reads them: the
// next record is written over them. They are cut off when the segment is
// sealed (before the seal is written, so a sealed segment ends with its
// seal) and on Close; after a crash, open cuts them as a tail of zeros.
//
// A token's text form is "@" + segment (8 hex digits) + offset (16) +
// length (8) + "@", upper case, e.g. "@0000000100000000000000300000089A@".
//
// The history log starts with "NFHIST01" and holds records of 32+m bytes:
//
//	0  2  magic "NH"
//	2  1  kind: 'A' stored, 'R' rejected, 'C' checkpoint
//	3  1  message-id length m (0 for 'C')
//	4  16 token: segment (4), offset (8), length (4) ('C': the position)
//	20 8  time, Unix nanoseconds ('C': newest arrival in that segment)
//	28 m  message-id
//	.. 4  CRC of the preceding bytes of the record
//
// History expiry rewrites the log through history.tmp (write, fsync, rename,
// fsync the directory), keeping one record per remembered id and a
// checkpoint.
package spoolfs
