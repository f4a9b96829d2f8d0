"""Simulator of the test domain, in SOP-Bench's shape: looks answers up in its own CSV.

Every value is returned as the CSV's text ("12.5", "3"), as SOP-Bench's CSV-backed simulators
return them: the agent has to read numbers out of strings.
"""

import csv
import os


class ShipmentHoldManager:
    DATASET_CSV_FILE = "test_set_with_outputs.csv"

    def __init__(self):
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), self.DATASET_CSV_FILE)
        print(f"Dataset file path: {path}")  # as SOP-Bench's simulators do: stdout noise
        with open(path, newline="") as f:
            self.rows = {r["shipment_id"]: r for r in csv.DictReader(f)}

    def _row(self, shipment_id):
        row = self.rows.get(shipment_id)
        if row is None:
            raise ValueError(f"Unknown shipment_id {shipment_id}")
        return row

    def getShipment(self, shipment_id):
        row = self.rows.get(shipment_id)
        if row is None or row["shipment_found"] != "yes":
            raise ValueError(f"No shipment found for shipment_id {shipment_id}")
        return {
            "shipment_id": shipment_id,
            "declared_weight_kg": row["declared_weight_kg"],
            "destination_country": row["destination_country"],
        }

    def getScan(self, shipment_id):
        row = self._row(shipment_id)
        return {"shipment_id": shipment_id, "scanned_weight_kg": row["scanned_weight_kg"]}

    def getCustomerRecord(self, shipment_id):
        row = self._row(shipment_id)
        return {
            "shipment_id": shipment_id,
            "prior_violations": row["prior_violations"],
            "account_age_days": row["account_age_days"],
        }

    def process_tool_call(self, tool_name, tool_input):
        return getattr(self, tool_name)(**tool_input)
