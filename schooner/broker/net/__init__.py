"""The network: listening sockets, connections and what each connection carries.

```
session.py limits.py watchdog.py   who is on the other end (Session), a request's RequestScope,
                                   what one connection may cost, its one timer for deadlines
tls.py refusals.py                 TLS contexts and certificate principals; the log of refusals
response_budget.py                 the bytes of responses a client has not taken yet
authentication.py                  SASL: the gate before the handlers, and the exchange
connection.py                      a connection's frames in, requests to the dispatch function, responses out
listener.py                        the listening sockets, one Listener per configured listener
endpoints.py                       a broker's address as a listener's clients see it
```

Nothing here knows a handler, the context or storage: server.py hands each listener the dispatch
function, so the network is the bottom floor of the broker.
"""
