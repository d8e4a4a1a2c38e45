-- Back to version 4: the client sends the claim's query itself.
DROP FUNCTION flowgen_reserve(text, bigint, text, bigint);
