__polyglavSearch.add("b000-of-001","m","m-94dc242df86f",{"sessions":5,"documents":18,"terms":"not reservationse","chunks":"23eew2vh asrmzhtl dnzvt4xm","starts":"s-jbt4msn6","facets":"f-7wpy7obe"});
