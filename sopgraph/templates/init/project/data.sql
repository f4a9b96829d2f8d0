-- The shop's data; `sopgraph init` built data.sqlite from it. After editing, rebuild with
--   rm data.sqlite && python -c "import sqlite3; sqlite3.connect('data.sqlite').executescript(open('data.sql').read())"
CREATE TABLE orders (order_id TEXT PRIMARY KEY, region TEXT NOT NULL, amount REAL NOT NULL,
                     placed_at TEXT NOT NULL);
CREATE TABLE deliveries (order_id TEXT NOT NULL, delivered_at TEXT NOT NULL);  -- UTC text

INSERT INTO orders VALUES
  ('A100', 'us', 25.00, '2025-03-01 09:00:00'),
  ('A101', 'us', 480.00, '2025-03-01 10:30:00'),
  ('A102', 'eu', 40.00, '2025-02-05 14:00:00'),
  ('A103', 'us', 60.00, '2025-03-02 08:15:00');

INSERT INTO deliveries VALUES
  ('A100', '2025-03-03 12:00:00'),
  ('A101', '2025-03-04 15:20:00'),
  ('A102', '2025-02-10 11:00:00');
