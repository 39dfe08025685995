"""τ²-bench's airline tools (``tau2/domains/airline/tools.py``, MIT) over the database as plain JSON,
tool for tool and message for message; records keep the field order of τ²-bench's pydantic models
(``data_model.py``) so results read as its ``model_dump`` does. Sandbox text, never imported (see
``runtime_common.py``). Numbers the models would coerce (``Payment.amount: int``) are coerced here.
"""
from copy import deepcopy

AIRPORTS = [("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
            ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
            ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"),
            ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
            ("PHL", "Philadelphia"), ("LGA", "LaGuardia")]
NOW = "2024-05-15T15:00:00"


def normalise(db):
    """What loading into τ²-bench's models fills in: ``Reservation.status`` (None unless cancelled),
    ``Address.address2``, payment amounts as floats."""
    for r in db["reservations"].values():
        r.setdefault("status", None)
    for u in db["users"].values():
        u["address"].setdefault("address2", None)
        for pm in u["payment_methods"].values():
            if "amount" in pm:
                pm["amount"] = float(pm["amount"])


def _int(value, field):
    """pydantic's lax int: whole floats and digit strings become ints."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise ValueError(f"1 validation error for {field}\n  Input should be a valid integer [input_value={value!r}]")


def _str(value, field):
    if not isinstance(value, str):
        raise ValueError(f"1 validation error for {field}\n  Input should be a valid string [input_value={value!r}]")
    return value


def _model(d, fields, model):
    if not isinstance(d, dict):
        raise ValueError(f"{model}(**...) needs an object, not {type(d).__name__}")
    extra = set(d) - {f for f, _ in fields}
    missing = [f for f, _ in fields if f not in d]
    if missing:
        raise ValueError(f"1 validation error for {model}\n{missing[0]}\n  Field required")
    del extra  # extra keys are ignored, as pydantic's default does
    return {f: conv(d[f], f"{model}.{f}") for f, conv in fields}


def _flight_info(d):
    return _model(d, [("flight_number", _str), ("date", _str)], "FlightInfo")


def _passenger(d):
    return _model(d, [("first_name", _str), ("last_name", _str), ("dob", _str)], "Passenger")


def _payment(d):
    return _model(d, [("payment_id", _str), ("amount", _int)], "Payment")


def _user(db, user_id):
    if user_id not in db["users"]:
        raise ValueError(f"User {user_id} not found")
    return db["users"][user_id]


def _reservation(db, reservation_id):
    if reservation_id not in db["reservations"]:
        raise ValueError(f"Reservation {reservation_id} not found")
    return db["reservations"][reservation_id]


def _flight(db, flight_number):
    if flight_number not in db["flights"]:
        raise ValueError(f"Flight {flight_number} not found")
    return db["flights"][flight_number]


def _flight_instance(db, flight_number, date):
    flight = _flight(db, flight_number)
    if date not in flight["dates"]:
        raise ValueError(f"Flight {flight_number} not found on date {date}")
    return flight["dates"][date]


def _new_reservation_id(db):
    for rid in ["HATHAT", "HATHAU", "HATHAV"]:
        if rid not in db["reservations"]:
            return rid
    raise ValueError("Too many reservations")


def _search_direct(db, date, origin=None, destination=None, leave_after=None):
    out = []
    for f in db["flights"].values():
        if ((origin is None or f["origin"] == origin) and (destination is None or f["destination"] == destination)
                and date in f["dates"] and f["dates"][date]["status"] == "available"
                and (leave_after is None or f["scheduled_departure_time_est"] >= leave_after)):
            out.append({"flight_number": f["flight_number"], "origin": f["origin"], "destination": f["destination"],
                        "status": "available", "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                        "scheduled_arrival_time_est": f["scheduled_arrival_time_est"], "date": None,
                        "available_seats": f["dates"][date]["available_seats"],
                        "prices": f["dates"][date]["prices"]})
    return out


def _payment_for_update(user, payment_id, total_price):
    if payment_id not in user["payment_methods"]:
        raise ValueError("Payment method not found")
    pm = user["payment_methods"][payment_id]
    if pm["source"] == "certificate":
        raise ValueError("Certificate cannot be used to update reservation")
    elif pm["source"] == "gift_card" and pm["amount"] < total_price:
        raise ValueError("Gift card balance is not enough")
    if pm["source"] == "gift_card":
        pm["amount"] -= total_price
    return {"payment_id": payment_id, "amount": total_price} if total_price != 0 else None


def book_reservation(db, user_id, origin, destination, flight_type, cabin, flights, passengers, payment_methods,
                     total_baggages, nonfree_baggages, insurance):
    if all(isinstance(x, dict) for x in flights):
        flights = [_flight_info(x) for x in flights]
    if all(isinstance(x, dict) for x in passengers):
        passengers = [_passenger(x) for x in passengers]
    if all(isinstance(x, dict) for x in payment_methods):
        payment_methods = [_payment(x) for x in payment_methods]
    user = _user(db, user_id)
    rid = _new_reservation_id(db)
    reservation = {"reservation_id": rid, "user_id": user_id, "origin": origin, "destination": destination,
                   "flight_type": flight_type, "cabin": cabin, "flights": [], "passengers": deepcopy(passengers),
                   "payment_history": deepcopy(payment_methods), "created_at": NOW,
                   "total_baggages": _int(total_baggages, "Reservation.total_baggages"),
                   "nonfree_baggages": _int(nonfree_baggages, "Reservation.nonfree_baggages"),
                   "insurance": insurance, "status": None}
    total_price, dated = 0, []
    for info in flights:
        number = info["flight_number"]
        flight = _flight(db, number)
        data = _flight_instance(db, number, info["date"])
        if data["status"] != "available":
            raise ValueError(f"Flight {number} not available on date {info['date']}")
        if data["available_seats"][cabin] < len(passengers):
            raise ValueError(f"Not enough seats on flight {number}")
        price = data["prices"][cabin]
        reservation["flights"].append({"origin": flight["origin"], "destination": flight["destination"],
                                       "flight_number": number, "date": info["date"], "price": price})
        dated.append(data)
        total_price += price * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages
    for pm in payment_methods:
        if pm["payment_id"] not in user["payment_methods"]:
            raise ValueError(f"Payment method {pm['payment_id']} not found")
        mine = user["payment_methods"][pm["payment_id"]]
        if mine["source"] in {"gift_card", "certificate"} and mine["amount"] < pm["amount"]:
            raise ValueError(f"Not enough balance in payment method {pm['payment_id']}")
    total_payment = sum(pm["amount"] for pm in payment_methods)
    if total_payment != total_price:
        raise ValueError(f"Payment amount does not add up, total price is {total_price}, but paid {total_payment}")
    for pm in payment_methods:
        mine = user["payment_methods"][pm["payment_id"]]
        if mine["source"] == "gift_card":
            mine["amount"] -= pm["amount"]
        elif mine["source"] == "certificate":
            user["payment_methods"].pop(pm["payment_id"])
    for data in dated:
        data["available_seats"][cabin] -= len(passengers)
    db["reservations"][rid] = reservation
    db["users"][user_id]["reservations"].append(rid)
    return reservation


def calculate(db, expression):
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))


def cancel_reservation(db, reservation_id):
    reservation = _reservation(db, reservation_id)
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return reservation


def get_reservation_details(db, reservation_id):
    return _reservation(db, reservation_id)


def get_user_details(db, user_id):
    return _user(db, user_id)


def list_all_airports(db):
    return [{"iata": code, "city": city} for code, city in AIRPORTS]


def search_direct_flight(db, origin, destination, date):
    return _search_direct(db, date=date, origin=origin, destination=destination)


def search_onestop_flight(db, origin, destination, date):
    out = []
    for first in _search_direct(db, date=date, origin=origin, destination=None):
        first["date"] = date
        date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
        for second in _search_direct(db, date=date2, origin=first["destination"], destination=destination,
                                     leave_after=first["scheduled_arrival_time_est"]):
            second["date"] = date2
            out.append([first, second])
    return out


def send_certificate(db, user_id, amount):
    user = _user(db, user_id)
    for payment_id in [f"certificate_{i}" for i in (3221322, 3221323, 3221324)]:
        if payment_id not in user["payment_methods"]:
            user["payment_methods"][payment_id] = {"source": "certificate", "id": payment_id, "amount": float(amount)}
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise ValueError("Too many certificates")


def transfer_to_human_agents(db, summary):
    return "Transfer successful"


def update_reservation_baggages(db, reservation_id, total_baggages, nonfree_baggages, payment_id):
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    total_price = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    return reservation


def update_reservation_flights(db, reservation_id, cabin, flights, payment_id):
    if all(isinstance(x, dict) for x in flights):
        flights = [_flight_info(x) for x in flights]
    reservation = _reservation(db, reservation_id)
    user = _user(db, reservation["user_id"])
    total_price, new_flights = 0, []
    n = len(reservation["passengers"])
    for info in flights:
        same = next((rf for rf in reservation["flights"] if rf["flight_number"] == info["flight_number"]
                     and rf["date"] == info["date"] and cabin == reservation["cabin"]), None)
        if same:
            total_price += same["price"] * n
            new_flights.append(same)
            continue
        flight = _flight(db, info["flight_number"])
        data = _flight_instance(db, info["flight_number"], info["date"])
        if data["status"] != "available":
            raise ValueError(f"Flight {info['flight_number']} not available on date {info['date']}")
        if data["available_seats"][cabin] < n:
            raise ValueError(f"Not enough seats on flight {info['flight_number']}")
        rf = {"origin": flight["origin"], "destination": flight["destination"], "flight_number": info["flight_number"],
              "date": info["date"], "price": data["prices"][cabin]}
        total_price += rf["price"] * n
        new_flights.append(rf)
    total_price -= sum(f["price"] for f in reservation["flights"]) * n
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["flights"] = new_flights
    reservation["cabin"] = cabin
    return reservation


def update_reservation_passengers(db, reservation_id, passengers):
    if all(isinstance(x, dict) for x in passengers):
        passengers = [_passenger(x) for x in passengers]
    reservation = _reservation(db, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise ValueError("Number of passengers does not match")
    reservation["passengers"] = deepcopy(passengers)
    return reservation


def get_flight_status(db, flight_number, date):
    return _flight_instance(db, flight_number, date)["status"]


TOOLS = {f.__name__: f for f in (
    book_reservation, calculate, cancel_reservation, get_reservation_details, get_user_details,
    list_all_airports, search_direct_flight, search_onestop_flight, send_certificate, transfer_to_human_agents,
    update_reservation_baggages, update_reservation_flights, update_reservation_passengers, get_flight_status)}
