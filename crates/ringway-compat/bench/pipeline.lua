-- wrk script: 16 GET /plaintext requests per write (HTTP/1.1 pipelining).
init = function(args)
   local r = {}
   for i = 1, 16 do
      r[i] = wrk.format(nil, "/plaintext")
   end
   req = table.concat(r)
end

request = function()
   return req
end
