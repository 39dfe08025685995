"""τ²-bench's banking_knowledge database and its helpers (``tau2/domains/banking_knowledge/data_model.py``,
``db_query.py`` and ``utils.py`` as the reference, MIT), evalkit's own code over plain data: part of the
banking sandbox source after ``runtime_banking.py``; never imported by evalkit.

The database is a dict {table: {"data": {record id: record}, "notes": text}} with the tables of τ²-bench's
``TransactionalDB`` (in its field order); a table the model lacks is no table, so adding to it does
nothing, as upstream. Dates are fixed (the domain's ``get_today``/``get_now``) and new record ids are
deterministic hashes of their content, as τ²-bench's."""
import datetime
import hashlib
import inspect
import json

TABLES = ("users", "accounts", "debit_cards", "referrals", "credit_card_applications", "user_discoverable_tools",
          "user_discoverable_tool_calls", "verification_history", "credit_card_transaction_history",
          "cash_back_disputes", "bank_account_transaction_history", "credit_card_accounts",
          "agent_discoverable_tools", "task_config", "human_transfer_requests", "transaction_disputes",
          "credit_card_orders", "debit_card_orders", "credit_card_closure_reasons", "credit_card_account_flags",
          "credit_limit_increase_requests", "payment_history", "debit_card_disputes")
#: the order ``query_database_tool`` lists the tables in (db_query's ``_load_databases``)
QUERYABLE = ("users", "accounts", "referrals", "credit_card_applications", "user_discoverable_tools",
             "user_discoverable_tool_calls", "agent_discoverable_tools", "task_config", "verification_history",
             "credit_card_transaction_history", "cash_back_disputes", "bank_account_transaction_history",
             "credit_card_accounts", "human_transfer_requests", "transaction_disputes", "credit_card_orders",
             "credit_card_closure_reasons", "credit_card_account_flags", "debit_cards", "debit_card_orders",
             "debit_card_disputes", "credit_limit_increase_requests", "payment_history")
TODAY = "11/14/2025"  # get_today_str()
NOW = datetime.datetime(2025, 11, 14, 3, 40, 0)  # get_now()


def new_db(raw):
    """``TransactionalDB(**raw)``: every table, data copied one level, no unknown table."""
    extra = sorted(set(raw) - set(TABLES))
    if extra:
        raise ValueError(f"TransactionalDB: extra fields {extra}")
    db = {}
    for t in TABLES:
        table = raw.get(t) or {}
        db[t] = {"data": dict(table.get("data") or {}), "notes": table.get("notes", "")}
    return db


def db_hash(db):
    """``get_pydantic_hash``: sha256 of the dump with sorted keys."""
    return hashlib.sha256(json.dumps(db, sort_keys=True, default=str).encode()).hexdigest()


def rows(db, table):
    return db[table]["data"]


def add(db, table, record_id, record):
    """``add_to_db``: False when there is no such table or the id is taken."""
    if table not in db or record_id in db[table]["data"]:
        return False
    db[table]["data"][record_id] = record
    return True


def update(db, table, record_id, changes):
    """``update_record_in_db``: the record updated, or None when absent."""
    if table not in db or record_id not in db[table]["data"]:
        return None
    db[table]["data"][record_id].update(changes)
    return db[table]["data"][record_id]


# ---- queries (db_query.py)
def _contains(a, b):
    return b in a if a is not None else False


_OPS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b,
        "gte": lambda a, b: a >= b, "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b, "contains": _contains,
        "startswith": lambda a, b: str(a).startswith(str(b)) if a is not None else False,
        "endswith": lambda a, b: str(a).endswith(str(b)) if a is not None else False,
        "in": lambda a, b: a in b, "nin": lambda a, b: a not in b}


def matches(record, constraints):
    """``field`` or ``field__op``: value, every one holding; a comparison that raises does not hold."""
    for key, want in constraints.items():
        field, op = key.rsplit("__", 1) if "__" in key else (key, "eq")
        try:
            if not _OPS.get(op, _OPS["eq"])(record.get(field), want):
                return False
        except (TypeError, ValueError):
            return False
    return True


def query_text(db, table, constraints="{}"):
    """``query_database_tool``: the matching records listed with their ids, or why none."""
    try:
        if table not in QUERYABLE:
            return f"Error: Database '{table}' not found. Available: {list(QUERYABLE)}"
        try:
            wanted = json.loads(constraints) if constraints else {}
        except json.JSONDecodeError as e:
            return f"Error: Invalid JSON: {e}"
        found = [(i, r) for i, r in rows(db, table).items() if matches(r, wanted)]
        if not found:
            return f"No records found in '{table}'."
        lines = [f"Found {len(found)} record(s) in '{table}':\n"]
        for n, (record_id, record) in enumerate(found, 1):
            lines.append(f"{n}. Record ID: {record_id}")
            lines += [f"   {k}: {v}" for k, v in record.items()]
            lines.append("")
        return "\n".join(lines)
    except Exception as e:  # noqa: BLE001 (as upstream)
        return f"Error querying database: {e}"


def query_by(db, table, field, value):
    """The tools' one-field lookups, whose constraint is JSON made by formatting the value in."""
    return query_text(db, table, f'{{"{field}": "{value}"}}')


def found(text):
    return "No records found" not in text and "No results found" not in text


def titled(s):
    return s.replace("_", " ").title()


# ---- deterministic ids (utils.py)
def hex_id(seed, length=16):
    return hashlib.sha256(seed.encode()).digest()[:length // 2].hex()


def transaction_id(user_id, card_type, merchant, amount, category):
    return "txn_" + hex_id(":".join(["transaction", user_id, card_type, merchant, f"{amount:.2f}", category]), 12)


def dispute_id(user_id, txn_id):
    return "dsp_" + hex_id(f"dispute:{user_id}:{txn_id}", 12)


def cli_request_id(cc_id, user_id, amount):
    return "cli_" + hex_id(f"cli_request:{cc_id}:{user_id}:{amount:.2f}", 12)


def tool_record_id(side, tool_name):
    """The id of a discoverable tool's record (``generate_{user,agent}_discoverable_tool_id``)."""
    return hex_id(f"{side}_discoverable_tool:{tool_name}")


def balance_of(value):
    """``_parse_balance``: a number, or text such as "$2,850.00"."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value.replace("$", "").replace(",", ""))
    return 0.0


def account_balance(account):
    return balance_of(account.get("current_holdings", account.get("balance", 0)))


def money(text):
    """A "$1,234.50" field as a number (0 when unreadable)."""
    try:
        return float(str(text).replace("$", "").replace(",", ""))
    except (ValueError, TypeError):
        return 0.0


def days_since(mmddyyyy):
    return (NOW - datetime.datetime.strptime(mmddyyyy, "%m/%d/%Y")).days


# ---- the discoverable tools' descriptions (data: banking_discoverable.json, from their docstrings)
def tool_card(name, info):
    """``format_discoverable_tool_for_agent``."""
    params = [f"  - {p}: {kind}{' (required)' if req else ' (optional)'} - {desc}"
              for p, kind, desc, req in info["parameters"]]
    return (f"Tool: {name}\nDescription: {info['description']}\nParameters:\n"
            + ("\n".join(params) if params else "  (no parameters)"))


def call_error(owner, fn, e):
    """A TypeError as Python words it for the upstream method (``Owner.name() ...``)."""
    text = str(e)
    prefix = f"{fn.__name__}()"
    return f"{owner}.{text}" if text.startswith(prefix) else text


def params_of(fn):
    """The tool's parameters (less the database) and which have no default."""
    ps = list(inspect.signature(fn).parameters.values())[1:]
    return [p.name for p in ps], [p.name for p in ps if p.default is inspect.Parameter.empty]
