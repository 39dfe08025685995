"""τ²-bench's retail tools (``tau2/domains/retail/tools.py``, MIT) over the database as plain JSON, tool
for tool and message for message (its quirks included: ``modify_pending_order_items`` prices every
modified item at the last new variant's price, as τ²-bench's loop does). Records keep the field
order of τ²-bench's pydantic models. Sandbox text, never imported (see ``runtime_common.py``).
"""
import json

ORDER_OPTIONAL = ("cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
                  "exchange_price_difference", "return_items", "return_payment_method_id")


def normalise(db):
    """What loading into τ²-bench's models fills in: an order's optional fields (None)."""
    for o in db["orders"].values():
        for k in ORDER_OPTIONAL:
            o.setdefault(k, None)


def _order(db, order_id):
    if order_id not in db["orders"]:
        raise ValueError("Order not found")
    return db["orders"][order_id]


def _user(db, user_id):
    if user_id not in db["users"]:
        raise ValueError("User not found")
    return db["users"][user_id]


def _product(db, product_id):
    if product_id not in db["products"]:
        raise ValueError("Product not found")
    return db["products"][product_id]


def _item(db, item_id):
    for product in db["products"].values():
        if item_id in product["variants"]:
            return product["variants"][item_id]
    raise ValueError("Item not found")


def _variant(db, product_id, variant_id):
    product = _product(db, product_id)
    if variant_id not in product["variants"]:
        raise ValueError("Variant not found")
    return product["variants"][variant_id]


def _payment_method(db, user_id, payment_method_id):
    user = _user(db, user_id)
    if payment_method_id not in user["payment_methods"]:
        raise ValueError("Payment method not found")
    return user["payment_methods"][payment_method_id]


def _gift_card(pm):
    return pm.get("source") == "gift_card"


def _payment(kind, amount, payment_method_id):
    return {"transaction_type": kind, "amount": float(amount), "payment_method_id": payment_method_id}


def _address(address1, address2, city, state, country, zip):
    return {"address1": address1, "address2": address2, "city": city, "country": country, "state": state, "zip": zip}


def _price_difference(db, order, item_ids, new_item_ids, distinct):
    """τ²-bench's loop over (old, new) item pairs: each new item a variant of the old one's product, in
    stock; returns the price difference and the last new variant (which τ²-bench's
    ``modify_pending_order_items`` prices every modified item at). ``distinct``: an item may not be
    replaced by itself (modify checks it, exchange does not)."""
    diff_price, variant = 0, None
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        if distinct and item_id == new_item_id:
            raise ValueError("The new item id should be different from the old item id")
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        variant = _variant(db, item["product_id"], new_item_id)
        if not variant["available"]:
            raise ValueError(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    return diff_price, variant


def calculate(db, expression):
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


def cancel_pending_order(db, order_id, reason):
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError("Non-pending order cannot be cancelled")
    if reason not in {"no longer needed", "ordered by mistake"}:
        raise ValueError("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        pid = payment["payment_method_id"]
        refunds.append(_payment("refund", payment["amount"], pid))
        user = _user(db, order["user_id"])
        pm = _payment_method(db, user["user_id"], pid)
        if _gift_card(pm):
            pm["balance"] += payment["amount"]
            pm["balance"] = round(pm["balance"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    return order


def exchange_delivered_order_items(db, order_id, item_ids, new_item_ids, payment_method_id):
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ValueError("Non-delivered order cannot be exchanged")
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            raise ValueError(f"Number of {item_id} not found.")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("The number of items to be exchanged should match.")
    diff_price, _ = _price_difference(db, order, item_ids, new_item_ids, distinct=False)
    diff_price = round(diff_price, 2)
    pm = _payment_method(db, order["user_id"], payment_method_id)
    if _gift_card(pm) and pm["balance"] < diff_price:
        raise ValueError("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = float(diff_price)
    return order


def find_user_id_by_name_zip(db, first_name, last_name, zip):
    for user_id, user in db["users"].items():
        if (user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower() and user["address"]["zip"] == zip):
            return user_id
    raise ValueError("User not found")


def find_user_id_by_email(db, email):
    for user_id, user in db["users"].items():
        if user["email"].lower() == email.lower():
            return user_id
    raise ValueError("User not found")


def get_order_details(db, order_id):
    return _order(db, order_id)


def get_product_details(db, product_id):
    return _product(db, product_id)


def get_item_details(db, item_id):
    return _item(db, item_id)


def get_user_details(db, user_id):
    return _user(db, user_id)


def list_all_product_types(db):
    return json.dumps({p["name"]: p["product_id"] for p in db["products"].values()}, sort_keys=True)


def modify_pending_order_address(db, order_id, address1, address2, city, state, country, zip):
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise ValueError("Non-pending order cannot be modified")
    order["address"] = _address(address1, address2, city, state, country, zip)
    return order


def modify_pending_order_items(db, order_id, item_ids, new_item_ids, payment_method_id):
    order = _order(db, order_id)
    if order["status"] != "pending":
        raise ValueError("Non-pending order cannot be modified")
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            raise ValueError(f"{item_id} not found")
    if len(item_ids) != len(new_item_ids):
        raise ValueError("The number of items to be exchanged should match")
    diff_price, variant = _price_difference(db, order, item_ids, new_item_ids, distinct=True)
    pm = _payment_method(db, order["user_id"], payment_method_id)
    if _gift_card(pm) and pm["balance"] < diff_price:
        raise ValueError("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append(_payment("payment" if diff_price > 0 else "refund", abs(diff_price),
                                              payment_method_id))
    if _gift_card(pm):
        pm["balance"] -= diff_price
        pm["balance"] = round(pm["balance"], 2)
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise ValueError(f"Item {item_id} not found")
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = variant["options"]
    order["status"] = "pending (item modified)"
    return order


def modify_pending_order_payment(db, order_id, payment_method_id):
    order = _order(db, order_id)
    if "pending" not in order["status"]:
        raise ValueError("Non-pending order cannot be modified")
    pm = _payment_method(db, order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise ValueError("There should be exactly one payment for a pending order")
    if history[0]["payment_method_id"] == payment_method_id:
        raise ValueError("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if _gift_card(pm) and pm["balance"] < amount:
        raise ValueError("Insufficient gift card balance to pay for the order")
    history.extend([_payment("payment", amount, payment_method_id),
                    _payment("refund", amount, history[0]["payment_method_id"])])
    if _gift_card(pm):
        pm["balance"] -= amount
        pm["balance"] = round(pm["balance"], 2)
    old = _payment_method(db, order["user_id"], history[0]["payment_method_id"])
    if _gift_card(old):
        old["balance"] += amount
        old["balance"] = round(old["balance"], 2)
    return order


def modify_user_address(db, user_id, address1, address2, city, state, country, zip):
    user = _user(db, user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    return user


def return_delivered_order_items(db, order_id, item_ids, payment_method_id):
    order = _order(db, order_id)
    if order["status"] != "delivered":
        raise ValueError("Non-delivered order cannot be returned")
    user = _user(db, order["user_id"])
    pm = _payment_method(db, user["user_id"], payment_method_id)
    if not _gift_card(pm) and payment_method_id != order["payment_history"][0]["payment_method_id"]:
        raise ValueError("Payment method should be the original payment method")
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            raise ValueError("Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    return order


def transfer_to_human_agents(db, summary):
    return "Transfer successful"


TOOLS = {f.__name__: f for f in (
    calculate, cancel_pending_order, exchange_delivered_order_items, find_user_id_by_name_zip,
    find_user_id_by_email, get_order_details, get_product_details, get_item_details, get_user_details,
    list_all_product_types, modify_pending_order_address, modify_pending_order_items,
    modify_pending_order_payment, modify_user_address, return_delivered_order_items, transfer_to_human_agents)}
