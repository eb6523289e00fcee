__polyglavSearch.add("b000-of-001","m","m-82f17cea6a04",{"sessions":5,"documents":18,"starts":["002410","d-ax7h4cor d-rapcl3e6 d-inrqiwib"],"facets":"f-j4sbytqv"});
