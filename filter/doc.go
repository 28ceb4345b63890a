// Package filter is --where: a SQL boolean expression over a table's
// columns that selects the rows a mount, `deltafs warm`, `deltafs cat` and
// `deltafs log` see, evaluated in three steps from the cheapest:
//
//   - partition pruning: over a data file's partition values (exact), so
//     no file of another partition is opened;
//   - file skipping: over the file's statistics in the log (numRecords,
//     minValues, maxValues, nullCount), so a file that cannot hold a match
//     is not opened either;
//   - row filtering: over the filter's columns of the rows left, a batch
//     at a time (Match, over scan.Batch vectors; MatchRow for one row).
//
// Decide gives the first two: Pruned, Skipped, All (every row matches:
// no row filtering needed) or Some.
//
// # Syntax
//
// Parse reads what Spark and DuckDB users write (see parse.go for the
// grammar): comparisons (= == <> != < <= > >=) of a column with a
// literal, IN and NOT IN lists of literals, BETWEEN, IS [NOT] NULL, AND,
// OR, NOT, parentheses, a bare boolean column. Literals: numbers, 'strings'
// (” for a quote), X'hex' for binary, TRUE, FALSE, NULL, DATE '...',
// TIMESTAMP '...', TIMESTAMP_NTZ '...'. Columns by their logical names
// (under column mapping too): bare (matched exactly, else
// case-insensitively when only one matches), `quoted` or "quoted".
// Anything else is refused with an *Error naming the part and its offset:
// function calls, subqueries, arithmetic, casts, LIKE, comparisons of two
// columns, nested fields, columns of nested types. Limits keep a hostile
// expression bounded in memory and time: 1 MiB of text, 64 levels of
// nesting (AND and OR chains are flat), 2^17 values in an IN list
// (matched through a set for every kind), numbers of at most 100 digits
// with an exponent within ±400 (parse.go).
//
// The grammar is parsed by hand (recursive descent, parse.go): the Go SQL
// parsers (vitess's sqlparser, TiDB's parser) parse whole MySQL dialects
// in tens of thousands of lines, xwb1989/sqlparser is unmaintained since
// 2018, and expr-lang/expr is not SQL; this grammar is a few productions,
// and the refusals name SQL's own constructs.
//
// # Semantics
//
// Bind resolves the expression against one version's schema; literals
// are converted to their column's type, or refused naming both
// ("column label is integer; 'x' at offset 8 is not a number"). A row is
// kept when the expression is TRUE: SQL's three-valued logic, a
// comparison with NULL is NULL, x NOT IN (1, NULL) is never TRUE.
// Integers compare exactly with any number (2 < 2.5); a float column's
// literal is rounded to float first (DuckDB's rule: f32 = 0.1 holds for
// the float nearest 0.1); NaN equals NaN and is greater than every number
// (Spark, DuckDB); -0.0 equals 0.0; decimals compare exactly; strings and
// binary bytewise (code point order); dates and timestamps to the
// microsecond, a time literal without a zone in UTC (deltafs prints
// timestamps in UTC), a date literal against a timestamp column as its
// midnight.
//
// # Statistics
//
// Statistics are used only where they bound values exactly: integer,
// decimal, date and boolean bounds as written; a string minimum always,
// a string maximum only when shorter than 32 characters (writers truncate
// longer ones, and a truncated maximum is below the values it stands
// for); timestamp bounds widened by one millisecond each way (written in
// milliseconds); a float minimum only (NaN sorts above everything and
// writers leave it out of the maximum), read in the column's own type (a
// float's as a float32, a double's as the lower of its double and float32
// readings, for files written before the column was widened); no binary
// bounds; null counts; numRecords, but a count of 0 skips nothing. A
// statistic missing or unreadable bounds nothing. A checkpoint's
// stats_parsed (without a stats string) skips alike: package snapshot
// renders it as the JSON string it stands for, where exact, and drops it
// when its types disagree with the schema. Deletion vectors need no
// care: statistics describe a file's rows before deletion, a superset.
//
// Statistics only ever skip: a file they say every row of matches is
// still read row by row (Decide gives All for partition values only), so
// statistics that lie that way admit nothing. The other way they are
// trusted, as Delta readers trust them: a file whose statistics say no
// row can match is not opened, even if (the log being wrong) some rows
// would. Opening files to check them would undo the
// point of skipping; a table whose statistics lie is damaged in a way
// only a full read detects.
package filter
