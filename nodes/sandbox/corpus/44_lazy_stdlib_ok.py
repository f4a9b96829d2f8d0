# attack: benign: datetime parsing and json (lazy stdlib imports)
# expect: ok
# stdout: {"hour": 10}
import datetime, json
t = datetime.datetime.strptime('2024-05-01 10:00', '%Y-%m-%d %H:%M')
print(json.dumps({'hour': t.hour}))
