"""hardneg core: records, GQA loading, the path executor, ids, config and run folders."""
