__polyglavSearch.add("b000-of-001","m","m-42a95a7fd3dc",{"sessions":5,"documents":18,"terms":"not reservationse","chunks":"23eew2vh asrmzhtl dnzvt4xm","starts":"s-jbt4msn6","facets":"f-7wpy7obe"});
