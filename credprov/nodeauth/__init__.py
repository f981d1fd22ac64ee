"""The Node authorizer, NodeRestriction admission and the object graph behind them."""
