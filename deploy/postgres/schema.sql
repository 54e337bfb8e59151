-- The tables and the one function fenced-writer.sh needs: every write checks
-- the writer's fencing token against the highest the database has seen, in
-- the transaction that makes the write.
--
-- bully-agent's token is a term and a leader id, both unsigned 64-bit, ordered
-- by term, then by leader id. numeric(20) holds any u64 (bigint stops at
-- 2^63 - 1), and comparing (term, leader) as a row compares them in that order.

-- The highest token a write has carried: one row, which every write locks.
CREATE TABLE fence (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    term   numeric(20) NOT NULL,
    leader numeric(20) NOT NULL
);
INSERT INTO fence (term, leader) VALUES (0, 0);

-- The job's work: one row per write, with the token it was written under. seq
-- is drawn while the fence row is locked, so seq order is commit order.
CREATE TABLE writes (
    seq    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    term   numeric(20) NOT NULL,
    leader numeric(20) NOT NULL
);

-- One fenced write. Called as one statement it is one transaction, which the
-- exception rolls back. The lock lives only while the server runs that
-- statement, so a writer frozen mid-write (SIGSTOP, a VM pause) holds no lock
-- that would stall the next leader (a BEGIN ... COMMIT of several statements
-- sent one by one would hold it across the pause).
CREATE FUNCTION fenced_write(w_term numeric, w_leader numeric) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    seen  fence;
    added bigint;
BEGIN
    -- Until the transaction ends no other writer can raise the fence: the
    -- check below still holds when the row is inserted.
    SELECT * INTO seen FROM fence FOR UPDATE;
    IF (w_term, w_leader) < (seen.term, seen.leader) THEN
        RAISE EXCEPTION 'fenced: token (%, %) is older than (%, %)',
            w_term, w_leader, seen.term, seen.leader;
    END IF;
    UPDATE fence SET term = w_term, leader = w_leader;
    INSERT INTO writes (term, leader) VALUES (w_term, w_leader)
        RETURNING seq INTO added;
    RETURN added;
END
$$;
