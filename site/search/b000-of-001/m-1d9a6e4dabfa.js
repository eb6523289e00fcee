__polyglavSearch.add("b000-of-001","m","m-1d9a6e4dabfa",{"sessions":5,"documents":18,"starts":["002410","d-ax7h4cor d-rapcl3e6 d-inrqiwib"],"facets":"f-j4sbytqv"});
