from invoice.total import invoice_total


def test_plain():
    assert invoice_total([{"price": 10.0, "quantity": 2}], {}) == 28.99


def test_vip_food_bulk():
    lines = [{"price": 5.0, "quantity": 10, "category": "food"}]
    assert invoice_total(lines, {"vip": True}) == 45.74


def test_coupon():
    lines = [{"price": 100.0, "quantity": 1, "category": "books"}]
    assert invoice_total(lines, {"years": 6}, {"kind": "fixed", "value": 5}) == 90.0
