"""Simulator of the test domain, in SOP-Bench's shape: looks answers up in its own CSV."""

import csv
import os


class RefundManager:
    DATASET_CSV_FILE = "test_set_with_outputs.csv"

    def __init__(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), self.DATASET_CSV_FILE)
        print(f"Dataset file path: {path}")  # as SOP-Bench's simulators do: stdout noise
        with open(path, newline="") as f:
            self.rows = {r["order_id"]: r for r in csv.DictReader(f)}

    def getOrder(self, order_id):
        row = self.rows.get(order_id)
        if row is None or row["order_found"] != "yes":
            raise ValueError(f"No order found for order_id {order_id}")
        return {"order_id": order_id, "status": "delivered"}

    def daysSinceDelivery(self, order_id):
        return {"order_id": order_id, "days_since_delivery": int(self.rows[order_id]["days"])}

    def process_tool_call(self, tool_name, tool_input):
        return getattr(self, tool_name)(**tool_input)
