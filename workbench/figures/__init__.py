"""Drawing a result: matplotlib figures, the data behind them and the chunk viewer."""
